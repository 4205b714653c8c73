package sshcmd

import (
	"slices"
	"strings"
	"testing"
)

// The ssh command line: the port, the key, host keys checked against
// the CLI's own file under one alias per launch, then the command.
func TestArgs(t *testing.T) {
	tg := Target{Host: "203.0.113.7", Port: 22001, User: "root", Alias: HostKeyAlias(42, "203.0.113.7", 22001, "1767225600")}
	got := Args(tg, "/home/r/.ssh/id_ed25519", "/home/r/.config/suanli/known_hosts", []string{"cat", "/etc/os-release"})
	want := []string{"-p", "22001", "-o", "StrictHostKeyChecking=accept-new", "-o", `UserKnownHostsFile="/home/r/.config/suanli/known_hosts"`,
		"-o", "HostKeyAlias=suanli-rental-42-203.0.113.7-22001-1767225600", "-o", "LogLevel=ERROR",
		"-o", `IdentityFile="/home/r/.ssh/id_ed25519"`, "-o", "IdentitiesOnly=yes", "--", "root@203.0.113.7", "cat", "/etc/os-release"}
	if !slices.Equal(got, want) {
		t.Errorf("Args:\n%q\nwant\n%q", got, want)
	}
	if got := Args(tg, "", "/k", nil); slices.Contains(got, "IdentitiesOnly=yes") || got[len(got)-1] != "root@203.0.113.7" {
		t.Errorf("without a key or a command: %q", got)
	}
}

// What the server names as the ssh target is checked before it reaches
// ssh's command line: a host name or an IP address, a plain user name,
// a port.
func TestCheckTarget(t *testing.T) {
	for _, h := range []string{"203.0.113.7", "::1", "2001:db8::5", "node-1.example.com", "gpu_3.internal", "localhost", "node.example."} {
		if err := CheckTarget(Target{Host: h, Port: 22, User: "root"}); err != nil {
			t.Errorf("host %q refused: %v", h, err)
		}
	}
	for _, h := range []string{"", "evil host", "-oProxyCommand=touch /tmp/x", "a@b", "h%h", "x..y", "-x.example", "fe80::1%eth0", "[::1]", "a\tb", "a\nb", strings.Repeat("a", 64) + ".example"} {
		if err := CheckTarget(Target{Host: h, Port: 22, User: "root"}); err == nil {
			t.Errorf("host %q accepted", h)
		}
	}
	for _, u := range []string{"root", "ubuntu", "a.b-c_d", "_svc"} {
		if err := CheckTarget(Target{Host: "h", Port: 22, User: u}); err != nil {
			t.Errorf("user %q refused: %v", u, err)
		}
	}
	for _, u := range []string{"", "-l", "root user", "r@h", "%u", ".hidden", strings.Repeat("u", 33)} {
		if err := CheckTarget(Target{Host: "h", Port: 22, User: u}); err == nil {
			t.Errorf("user %q accepted", u)
		}
	}
	if err := CheckTarget(Target{Host: "h", Port: 0, User: "root"}); err == nil {
		t.Error("port 0 accepted")
	}
}

// A file name ssh would expand from the environment (${NAME}) cannot be
// escaped; a $ alone and a % can.
func TestCheckPath(t *testing.T) {
	if err := CheckPath("/home/r/${HOME}/known_hosts"); err == nil {
		t.Error("${ accepted")
	}
	if err := CheckPath("/home/r/$HOME %d/known_hosts"); err != nil {
		t.Errorf("a plain $ and a %%: %v", err)
	}
}

// A path ssh reads as one file: quoted, \ and " escaped, % doubled; a
// path printed for a shell is one word.
func TestQuoting(t *testing.T) {
	if got := pathOption(`/h/my "c" 100%d\x/k`); got != `"/h/my \"c\" 100%%d\\x/k"` {
		t.Errorf("pathOption: %s", got)
	}
	for in, want := range map[string]string{"/home/r/.ssh/id": "/home/r/.ssh/id", "/h/a b/id": "'/h/a b/id'", "/h/it's": `'/h/it'\''s'`, "": "''"} {
		if got := ShellWord(in); got != want {
			t.Errorf("ShellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
