package images

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Docker names a registry in credentials by its host (with a dot or a
// port, or localhost), and Docker Hub by its v1 address.
func TestRegistryServer(t *testing.T) {
	for ref, want := range map[string]string{
		"ubuntu:22.04":                          dockerHubServer,
		"pytorch/pytorch:2.5.1":                 dockerHubServer,
		"docker.io/lab/train:1":                 dockerHubServer,
		"index.docker.io/lab/train:1":           dockerHubServer,
		"ghcr.io/lab/train:1":                   "ghcr.io",
		"registry.example.cn:5000/lab/train:v1": "registry.example.cn:5000",
		"127.0.0.1:41234/suanli-test/sshd:b":    "127.0.0.1:41234",
		"localhost/x:1":                         "localhost",
		"[::1]:5000/img:v1":                     "[::1]:5000",
		"lab/sub/train:1":                       dockerHubServer,
	} {
		if got := RegistryServer(ref); got != want {
			t.Errorf("RegistryServer(%q) = %q, want %q", ref, got, want)
		}
	}
}

// A credential printed, logged or encoded by mistake shows its username,
// never its password.
func TestRegistryAuthNeverShowsItsPassword(t *testing.T) {
	a := RegistryAuth{Username: "bob", Password: "hunter2-secret"}
	var log bytes.Buffer
	slog.New(slog.NewTextHandler(&log, nil)).Info("rent", "auth", a, "ptr", &a)
	j, err := json.Marshal(struct{ A, B any }{a, &a})
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]string{
		"%v": fmt.Sprintf("%v", a), "%+v": fmt.Sprintf("%+v", a), "%#v": fmt.Sprintf("%#v", a), "%s": fmt.Sprintf("%s", &a),
		"%+v of a struct holding it": fmt.Sprintf("%+v", struct{ Auth *RegistryAuth }{&a}),
		"slog":                       log.String(), "JSON": string(j),
	} {
		if strings.Contains(s, "hunter2") || !strings.Contains(s, "bob") {
			t.Errorf("%s: %s", what, s)
		}
	}
	var back RegistryAuth
	if err := json.Unmarshal([]byte(`{"username":"bob","password":"pw"}`), &back); err != nil || back.Password != "pw" {
		t.Errorf("decoding a request: %+v %v", back.Password == "pw", err)
	}
}
