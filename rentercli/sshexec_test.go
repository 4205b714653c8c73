package rentercli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rentalServer answers GET /api/v1/rentals/5 with a running rental
// reached at host:port as user.
func rentalServer(t *testing.T, host string, port int, user string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/rentals/5" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":5,"state":"running","gpus":1,"ssh":{"host":%q,"port":%d,"user":%q,"command":""}}`, host, port, user)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fakeSSH is a script standing in for ssh that writes each argument on
// a line of its own to the file it returns.
func fakeSSH(t *testing.T) (prog, argsFile string) {
	t.Helper()
	dir := t.TempDir()
	prog, argsFile = filepath.Join(dir, "fake-ssh"), filepath.Join(dir, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '" + argsFile + "'\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, argsFile
}

// ssh splits an option's value at white space and expands % in file
// names: a configuration directory and a key under a home with a space,
// a % and a double quote in their names reach ssh quoted and escaped,
// and the system ssh (where there is one) reads the names back as they
// are.
func TestSSHPathsWithSpacesAndPercents(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home 100%h")
	xdg := filepath.Join(base, `my "conf" %d dir`)
	sshDir := filepath.Join(home, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(sshDir, "id_ed25519")
	for name, text := range map[string]string{priv: "-----BEGIN OPENSSH PRIVATE KEY-----\n", priv + ".pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 r@h\n"} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	prog, argsFile := fakeSSH(t)
	srv := rentalServer(t, "203.0.113.7", 22001, "root")
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": xdg, "SUANLI_SERVER": srv.URL, "SUANLI_TOKEN": "tok", "SUANLI_SSH": prog}
	if out, errOut, code := runCLI(t, env, "ssh", "5", "--", "true"); code != 0 {
		t.Fatalf("suanli ssh: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	knownHosts := filepath.Join(xdg, "suanli", knownHostsName)
	wantKnown := `UserKnownHostsFile="` + strings.ReplaceAll(strings.ReplaceAll(knownHosts, "%", "%%"), `"`, `\"`) + `"`
	wantIdentity := `IdentityFile="` + strings.ReplaceAll(priv, "%", "%%") + `"`
	if !slices.Contains(args, wantKnown) || !slices.Contains(args, wantIdentity) || slices.Contains(args, "-i") || args[len(args)-2] != "root@203.0.113.7" {
		t.Fatalf("ssh's arguments:\n%s\nwant %s and %s", strings.Join(args, "\n"), wantKnown, wantIdentity)
	}

	// The real ssh reads the options back (-G prints the configuration
	// it would use and connects nowhere).
	sshPath, err := exec.LookPath("ssh")
	if err != nil {
		t.Log("no ssh client on PATH: the arguments are not read back by ssh itself")
		return
	}
	out, err := exec.Command(sshPath, append([]string{"-G", "-F", "/dev/null"}, args[:len(args)-1]...)...).Output()
	if err != nil {
		t.Fatalf("ssh -G: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	if !slices.Contains(lines, "userknownhostsfile "+knownHosts) {
		t.Errorf("ssh -G reads another known_hosts than %q:\n%s", knownHosts, out)
	}
	// -G shows an identity before its % expansion (ssh expands it when
	// it loads the key: %% is %).
	if !slices.Contains(lines, "identityfile "+strings.ReplaceAll(priv, "%", "%%")) {
		t.Errorf("ssh -G reads another identity than %q:\n%s", priv, out)
	}
}

// What the server names as the ssh target is checked before it reaches
// ssh's command line (sshcmd.CheckTarget): a clear error, and ssh is not
// run.
func TestSSHTargetIsChecked(t *testing.T) {
	prog, argsFile := fakeSSH(t)
	srv := rentalServer(t, "evil host -oProxyCommand=x", 22, "root")
	env := map[string]string{"HOME": t.TempDir(), "SUANLI_SERVER": srv.URL, "SUANLI_TOKEN": "tok", "SUANLI_SSH": prog}
	_, errOut, code := runCLI(t, env, "ssh", "5")
	if code != ExitError || !strings.Contains(errOut, "the server's SSH address for rental 5 cannot be given to ssh: host \"evil host -oProxyCommand=x\" is not a host name or an IP address") {
		t.Errorf("an odd host: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(argsFile); err == nil {
		t.Error("ssh ran with an odd host")
	}
}

// A configuration directory ssh would expand from the environment
// (${NAME}) cannot be given to it: it is refused with what to do.
func TestSSHPathWithDollarBraceIsRefused(t *testing.T) {
	prog, _ := fakeSSH(t)
	srv := rentalServer(t, "127.0.0.1", 2222, "root")
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": filepath.Join(t.TempDir(), "${X}"), "SUANLI_SERVER": srv.URL, "SUANLI_TOKEN": "tok", "SUANLI_SSH": prog}
	_, errOut, code := runCLI(t, env, "ssh", "5")
	if code != ExitUsage || !strings.Contains(errOut, "which ssh would expand from the environment") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}
