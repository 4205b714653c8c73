package rentercli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"suanli/rentercli/sshcmd"
)

// sshKey is the key a rental is rented with: the public half's path and
// text, and the private half's path when it lies beside it.
type sshKey struct {
	pubPath, pub, privPath string
}

// defaultKeyNames are the public keys tried without --ssh-key, in order.
var defaultKeyNames = []string{"id_ed25519.pub", "id_rsa.pub"}

// findKey reads the public key at path, or without a path the first of
// ~/.ssh/id_ed25519.pub and ~/.ssh/id_rsa.pub. A path to a private key
// whose .pub lies beside it means that .pub.
func (a *app) findKey(path string) (sshKey, error) {
	if path == "" {
		home := a.env["HOME"]
		for _, n := range defaultKeyNames {
			p := filepath.Join(home, ".ssh", n)
			if _, err := os.Stat(p); err == nil {
				return a.readKey(p)
			}
		}
		return sshKey{}, a.errorf(ExitUsage, "cli.err.no_ssh_key", filepath.Join(home, ".ssh", defaultKeyNames[0]), filepath.Join(home, ".ssh", defaultKeyNames[1]))
	}
	if !strings.HasSuffix(path, ".pub") {
		if _, err := os.Stat(path + ".pub"); err == nil {
			path += ".pub"
		}
	}
	return a.readKey(path)
}

// readKey reads a public key file: one line, an OpenSSH public key.
func (a *app) readKey(path string) (sshKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return sshKey{}, a.errorf(ExitUsage, "cli.err.ssh_key_read", path, err)
	}
	pub := strings.TrimSpace(string(b))
	if strings.Contains(pub, "PRIVATE KEY") || strings.Count(pub, "\n") > 0 || !looksLikePublicKey(pub) {
		return sshKey{}, a.errorf(ExitUsage, "cli.err.ssh_key_not_public", path)
	}
	k := sshKey{pubPath: path, pub: pub}
	if priv := strings.TrimSuffix(path, ".pub"); priv != path {
		if _, err := os.Stat(priv); err == nil {
			k.privPath = priv
		}
	}
	return k, nil
}

// looksLikePublicKey reports whether s is an authorized_keys line of a
// key type OpenSSH knows.
func looksLikePublicKey(s string) bool {
	typ, _, _ := strings.Cut(s, " ")
	return strings.HasPrefix(typ, "ssh-") || strings.HasPrefix(typ, "ecdsa-") || strings.HasPrefix(typ, "sk-")
}

// runSSHProgram runs the system ssh (SUANLI_SSH names another program)
// with args, on the command's streams, and returns its exit status as
// the command's: a remote command's own, or ssh's 255 when it could not
// log in.
func (a *app) runSSHProgram(args []string) error {
	prog := a.env["SUANLI_SSH"]
	if prog == "" {
		prog = "ssh"
	}
	path, err := sshcmd.LookPath(prog, a.env["PATH"])
	if err != nil {
		return a.errorf(ExitError, "cli.err.no_ssh", prog)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Env = sshcmd.EnvList(a.env)
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// The remote command's status is the command's, without a word:
		// ssh and the command have said what there was to say.
		code := ee.ExitCode()
		if code < 0 {
			code = 255 // killed by a signal: ssh's own failure status
		}
		return &cliError{code: code}
	}
	return err
}
