package apperr

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWrongJSONTypeNamesTheKey: a value of the wrong type is named by
// its top-level JSON key, also when it lies in an embedded struct (whose
// Go name encoding/json puts in the path) or inside an object.
func TestWrongJSONTypeNamesTheKey(t *testing.T) {
	type Shared struct {
		Ports []int `json:"ports"`
	}
	type body struct {
		Shared
		Auth *struct {
			User string `json:"username"`
		} `json:"registry_auth"`
		Labels map[string]string `json:"labels"`
	}
	for in, want := range map[string]string{
		`{"ports":"8000"}`:                 "ports",
		`{"registry_auth":{"username":1}}`: "registry_auth",
		`{"labels":["a"]}`:                 "labels",
	} {
		var b body
		err := json.NewDecoder(strings.NewReader(in)).Decode(&b)
		e := WrongJSONType(err)
		if e == nil || e.Field != want {
			t.Errorf("%s: got %+v (from %v), want the field %s", in, e, err, want)
		}
	}
}
