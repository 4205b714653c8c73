// Package sshcmd is the command line `suanli ssh` gives the system ssh
// for a rental: the options, the file names as ssh reads them (quoted,
// with % escaped), the checks on what the server says to connect to,
// and finding the program. It runs nothing itself.
package sshcmd

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Target is where `suanli ssh` logs in.
type Target struct {
	Host string
	Port int
	User string
	// Alias names the host key in known_hosts: the rental and its
	// launch (see HostKeyAlias).
	Alias string
}

// HostKeyAlias names a rental's host key in the known_hosts file. A
// container makes new host keys each time it is launched (a start after
// a stop, a move to another node) and ports are reused by later
// rentals, so the name is the rental, its address and the launch's
// start: a new launch is trusted at first sight (accept-new), and a
// changed key within one launch, which only a machine in the middle
// would show, is refused by ssh.
func HostKeyAlias(rentalID int64, host string, port int, launch string) string {
	alias := fmt.Sprintf("suanli-rental-%d-%s-%d", rentalID, host, port)
	if launch != "" {
		alias += "-" + launch
	}
	return alias
}

// Args is the ssh command line (after the program) for target: the
// port, the identity when known, host key checking against the CLI's own
// known_hosts, then the destination and the remote command. The paths
// go in -o options, quoted and escaped (pathOption): ssh splits an
// option's value at white space (UserKnownHostsFile takes several
// files) and expands % tokens in both files' names. -i is not used for
// the identity: ssh checks that file's name before expanding it, so no
// spelling of a name with a % in it passes both. The target's host and
// user are checked (CheckTarget) and the paths (CheckPath) before.
func Args(t Target, identity, knownHosts string, remote []string) []string {
	args := []string{"-p", strconv.Itoa(t.Port),
		"-o", "StrictHostKeyChecking=accept-new",
		"-o", "UserKnownHostsFile=" + pathOption(knownHosts),
		"-o", "HostKeyAlias=" + t.Alias,
		"-o", "LogLevel=ERROR",
	}
	if identity != "" {
		args = append(args, "-o", "IdentityFile="+pathOption(identity), "-o", "IdentitiesOnly=yes")
	}
	args = append(args, "--", t.User+"@"+t.Host)
	return append(args, remote...)
}

// pathOption is path as the value of an ssh option naming a file: %
// doubled (ssh's percent expansion gives it back) and the whole in
// double quotes with \ and " escaped, as ssh_config's argument
// splitting reads them.
func pathOption(path string) string {
	path = strings.ReplaceAll(path, "%", "%%")
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(path) + `"`
}

// CheckPath refuses a file name that ssh cannot be given: ${NAME} in
// it is expanded from the environment and cannot be escaped, and a
// control character ends or breaks an option.
func CheckPath(path string) error {
	if strings.Contains(path, "${") {
		return fmt.Errorf("%q contains ${, which ssh would expand from the environment", path)
	}
	if strings.ContainsFunc(path, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%q contains a control character", path)
	}
	return nil
}

// hostLabelRe is one label of a host name: letters, digits, hyphens
// (and the underscores some internal names have), not starting or
// ending with a hyphen.
var hostLabelRe = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// userRe is a user name that is safe on a command line and in
// user@host: what useradd accepts, less the odd characters.
var userRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,31}$`)

// CheckTarget checks what the server said to connect to before it
// reaches ssh's command line: the host a host name or an IP address,
// the user a plain user name, the port a port. Anything else (white
// space, an option's leading -, an @, a % token) would change what ssh
// is told, so it is refused rather than passed on.
func CheckTarget(t Target) error {
	if !validHost(t.Host) {
		return fmt.Errorf("host %q is not a host name or an IP address", t.Host)
	}
	if !userRe.MatchString(t.User) {
		return fmt.Errorf("user %q is not a plain user name", t.User)
	}
	if t.Port < 1 || t.Port > 65535 {
		return fmt.Errorf("port %d is not a TCP port", t.Port)
	}
	return nil
}

// validHost reports whether host is an IP address (without a zone)
// or a host name of at most 253 characters.
func validHost(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Zone() == ""
	}
	name := strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return false
	}
	for _, l := range strings.Split(name, ".") {
		if !hostLabelRe.MatchString(l) {
			return false
		}
	}
	return true
}

// ShellWord is s as one word of a POSIX shell (the ssh command the CLI
// prints for copying): as it is when it is plain, else single-quoted.
func ShellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:,=@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LookPath finds prog in the PATH of the command's environment, else in
// the process's.
func LookPath(prog, pathEnv string) (string, error) {
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

// EnvList turns the environment map back into a process environment
// (sorted, so that runs are alike).
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
