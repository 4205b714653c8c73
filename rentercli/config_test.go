package rentercli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"suanli/locales"
)

// The configuration holds a token: its directory is 0700 and its file
// 0600 after every write, whatever they were before (a directory made by
// another tool, a file copied with 0644).
func TestConfigIsPrivateAfterEveryWrite(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "suanli")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, configFileName)
	if err := os.WriteFile(path, []byte(`{"server":"https://old.example","token":"old"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := saveConfig(dir, Config{Server: "https://suanli.example", Token: "tok"}); err != nil {
		t.Fatal(err)
	}
	assertMode(t, dir, 0o700)
	assertMode(t, path, 0o600)
	c, err := loadConfig(dir)
	if err != nil || c.Server != "https://suanli.example" || c.Token != "tok" {
		t.Fatalf("read back %+v, %v", c, err)
	}

	// rememberKey writes the file too, and keeps the login.
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := rememberKey(dir, 42, "/home/r/.ssh/lab.pub"); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	c, _ = loadConfig(dir)
	if c.Token != "tok" || c.RentalKeys["42"] != "/home/r/.ssh/lab.pub" {
		t.Fatalf("after rememberKey: %+v", c)
	}
	// No temporary file is left beside it.
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the config directory holds %d entries, want only %s", len(es), configFileName)
	}
}

func assertMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", path, got, want)
	}
}

// Where the configuration lives, and what overrides it.
func TestSettingsPrecedence(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	if err := saveConfig(filepath.Join(xdg, "suanli"), Config{Server: "https://xdg.example", Token: "xdg-token"}); err != nil {
		t.Fatal(err)
	}
	if err := saveConfig(filepath.Join(home, ".config", "suanli"), Config{Server: "https://home.example", Token: "home-token"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                string
		env                 map[string]string
		wantServer, wantTok string
	}{
		{"XDG_CONFIG_HOME first", map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg}, "https://xdg.example", "xdg-token"},
		{"else ~/.config", map[string]string{"HOME": home}, "https://home.example", "home-token"},
		{"a relative XDG_CONFIG_HOME is ignored", map[string]string{"HOME": home, "XDG_CONFIG_HOME": "rel/dir"}, "https://home.example", "home-token"},
		{"SUANLI_SERVER and SUANLI_TOKEN override the file", map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg,
			"SUANLI_SERVER": "https://env.example", "SUANLI_TOKEN": "env-token"}, "https://env.example", "env-token"},
		{"each on its own", map[string]string{"HOME": home, "SUANLI_TOKEN": "env-token"}, "https://home.example", "env-token"},
		{"no file: only the environment", map[string]string{"HOME": t.TempDir(), "SUANLI_SERVER": "https://env.example"}, "https://env.example", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := loadSettings(c.env)
			if err != nil {
				t.Fatal(err)
			}
			if s.server != c.wantServer || s.token != c.wantTok {
				t.Errorf("server %q token %q, want %q %q", s.server, s.token, c.wantServer, c.wantTok)
			}
		})
	}
	if _, err := loadSettings(map[string]string{}); err == nil {
		t.Error("neither HOME nor XDG_CONFIG_HOME: want an error")
	}
}

// A command that needs a login says so with exit 3 when there is none.
func TestNotLoggedInIsExit3(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir(), "LANG": "en_US.UTF-8"}
	out, errOut, code := runCLI(t, env, "rentals")
	if code != ExitUnauthorised || out != "" || errOut != "suanli: not logged in: run suanli login (or set SUANLI_SERVER and SUANLI_TOKEN)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// SUANLI_SERVER is read as login reads a server: a bare host is https,
// a trailing slash goes, and what is no http(s) URL is a usage error
// naming the variable. A token bound for plain HTTP on another machine
// is warned of on standard error, once a command; loopback is not.
func TestServerFromTheEnvironment(t *testing.T) {
	home := t.TempDir()
	for in, want := range map[string]string{
		"suanli.example":             "https://suanli.example",
		"suanli.example:8443/":       "https://suanli.example:8443",
		"https://suanli.example/api": "https://suanli.example/api",
		"http://127.0.0.1:8080":      "http://127.0.0.1:8080",
	} {
		a := &app{env: map[string]string{"HOME": home, "SUANLI_SERVER": in}, stderr: &bytes.Buffer{}, lang: locales.EN}
		if s, err := a.settings(); err != nil || s.server != want {
			t.Errorf("SUANLI_SERVER=%s: %q, %v; want %q", in, s.server, err, want)
		}
	}
	for _, bad := range []string{"ftp://suanli.example", "https://", "http://x/?a=b"} {
		a := &app{env: map[string]string{"HOME": home, "SUANLI_SERVER": bad}, stderr: &bytes.Buffer{}, lang: locales.EN}
		if _, err := a.settings(); exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "the server URL in SUANLI_SERVER") {
			t.Errorf("SUANLI_SERVER=%s: exit %d, %v", bad, exitCodeOf(err), err)
		}
	}
	// Through a command: the bare host is not "unsupported protocol
	// scheme" (it is tried over https; nothing listens there).
	_, errOut, _ := runCLI(t, map[string]string{"HOME": home, "SUANLI_SERVER": "127.0.0.1:1", "SUANLI_TOKEN": "tok"}, "wallet")
	if strings.Contains(errOut, "unsupported protocol scheme") || !strings.Contains(errOut, "https://127.0.0.1:1") {
		t.Errorf("a bare host: %q", errOut)
	}

	warned := func(server, token string) string {
		var e bytes.Buffer
		a := &app{env: map[string]string{"HOME": home, "SUANLI_SERVER": server, "SUANLI_TOKEN": token}, stderr: &e, lang: locales.EN}
		for range 2 {
			if _, err := a.settings(); err != nil {
				t.Fatal(err)
			}
		}
		return e.String()
	}
	if got := warned("http://suanli.example", "tok"); strings.Count(got, "Warning: http://suanli.example is plain HTTP: your API token travels to it unencrypted") != 1 {
		t.Errorf("plain HTTP to another machine: stderr %q, want one warning", got)
	}
	for _, quiet := range [][2]string{{"https://suanli.example", "tok"}, {"http://127.0.0.1:8080", "tok"}, {"http://localhost:8080", "tok"},
		{"http://[::1]:8080", "tok"}, {"http://suanli.example", ""}} {
		if got := warned(quiet[0], quiet[1]); got != "" {
			t.Errorf("%s with token %q: stderr %q, want no warning", quiet[0], quiet[1], got)
		}
	}
}
