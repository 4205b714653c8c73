package rentercli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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

// sshTarget is where `suanli ssh` logs in.
type sshTarget struct {
	host string
	port int
	user string
	// alias names the host key in known_hosts: the rental and its
	// launch (see hostKeyAlias).
	alias string
}

// hostKeyAlias names a rental's host key in the known_hosts file. A
// container makes new host keys each time it is launched (a start after
// a stop, a move to another node) and ports are reused by later
// rentals, so the name is the rental, its address and the launch's
// start: a new launch is trusted at first sight (accept-new), and a
// changed key within one launch, which only a machine in the middle
// would show, is refused by ssh.
func hostKeyAlias(rentalID int64, host string, port int, launch string) string {
	alias := fmt.Sprintf("suanli-rental-%d-%s-%d", rentalID, host, port)
	if launch != "" {
		alias += "-" + launch
	}
	return alias
}

// sshArgs is the ssh command line (after the program) for target: the
// port, the identity when known, host key checking against the CLI's own
// known_hosts, then the destination and the remote command.
func sshArgs(t sshTarget, identity, knownHosts string, remote []string) []string {
	args := []string{"-p", strconv.Itoa(t.port),
		"-o", "StrictHostKeyChecking=accept-new",
		"-o", "UserKnownHostsFile=" + knownHosts,
		"-o", "HostKeyAlias=" + t.alias,
		"-o", "LogLevel=ERROR",
	}
	if identity != "" {
		args = append(args, "-i", identity, "-o", "IdentitiesOnly=yes")
	}
	args = append(args, "--", t.user+"@"+t.host)
	return append(args, remote...)
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
	path, err := lookPath(prog, a.env["PATH"])
	if err != nil {
		return a.errorf(ExitError, "cli.err.no_ssh", prog)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	cmd.Env = envList(a.env)
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

// lookPath finds prog in the PATH of the command's environment, else in
// the process's.
func lookPath(prog, pathEnv string) (string, error) {
	if strings.Contains(prog, "/") {
		return exec.LookPath(prog)
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(prog)
}

// envList turns the environment map back into a process environment
// (sorted, so that runs are alike).
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
