package openapi

import (
	"encoding/json"
	"testing"

	"suanli/agent"
)

// The API's access details (agent.Access and the ssh object beside it)
// match the Access schema, with and without Jupyter, and the schema
// refuses a Jupyter of an unknown kind or with a token.
func TestAccessSchema(t *testing.T) {
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	const ptr = "#/components/schemas/Access"
	body := func(a agent.Access) []byte {
		b, err := json.Marshal(struct {
			agent.Access
			SSH map[string]any `json:"ssh"`
		}{a, map[string]any{"host": a.Host, "port": a.Port, "user": a.User, "command": a.Command}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain := agent.Access{Host: "203.0.113.7", Port: 22001, User: "root", Command: "ssh -p 22001 root@203.0.113.7", Container: true}
	if err := v.validate(ptr, body(plain)); err != nil {
		t.Errorf("without Jupyter: %v", err)
	}
	withJ := plain
	withJ.Jupyter = &agent.Jupyter{Port: 8888, Kind: agent.JupyterLab}
	if err := v.validate(ptr, body(withJ)); err != nil {
		t.Errorf("with Jupyter: %v", err)
	}
	withJ.Jupyter = &agent.Jupyter{Port: 8888, Kind: "voila"}
	if err := v.validate(ptr, body(withJ)); err == nil {
		t.Error("a Jupyter of an unknown kind passed")
	}
	if err := v.validate(ptr, []byte(`{"host":"h","port":1,"user":"root","command":"c","simulated":false,"ssh":{"host":"h","port":1,"user":"root","command":"c"},"jupyter":{"port":8888,"kind":"lab","token":"x"}}`)); err == nil {
		t.Error("a Jupyter with a token passed")
	}
}
