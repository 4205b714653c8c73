package docker

import (
	"archive/tar"
	"bytes"
	"strconv"
	"strings"
	"time"

	"suanli/agent/workload"
)

// initDir is where the launcher puts its init and the renter's key in a
// container, before starting it; initPath is the container's entrypoint.
const (
	initDir  = "/.suanli"
	initPath = initDir + "/init"
)

// noSSHDMarker is the line the init prints when the image has no sshd;
// the launcher looks for it in the container's log.
const noSSHDMarker = "suanli-init: image has no sshd"

// initScript is the container's entrypoint: a POSIX sh script, so that
// any image with OpenSSH's sshd (and a /bin/sh, which every image that
// has sshd has) works without being built for Suanli. It installs the
// renter's key for root, makes host keys the image lacks, passes the
// container's environment on to login shells (an image's ENV — CUDA's
// PATH and LD_LIBRARY_PATH — would otherwise be lost: sshd starts
// sessions with a clean environment; the renter's variables are part of
// it; the file is root's only, 0600, as it may hold secrets), starts
// Jupyter beside it when the image has it (jupyterScript),
// starts sshd, logging to stderr (the container's log), runs the renter's
// on-start script in the background once sshd listens (onstartScript),
// and stays PID 1, passing a stop's SIGTERM on to every process.
//
// The options on sshd's command line make the key work whatever the
// image's sshd_config says: root may log in with a key only, and no
// password is accepted.
const initScript = `#!/bin/sh
# Suanli's container init: installs the renter's SSH key and runs sshd.
set -eu
umask 022
# The renter's PATH replaces the image's, and one pasted as a shell line
# (PATH=/opt/conda/bin:$PATH, the $ kept literally) has no /bin: the
# standard directories come after it, for this init and what it starts.
PATH="${PATH:-}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export PATH

sshd=""
for p in /usr/sbin/sshd /usr/bin/sshd /sbin/sshd /usr/local/sbin/sshd /usr/local/bin/sshd; do
	if [ -x "$p" ]; then sshd="$p"; break; fi
done
if [ -z "$sshd" ]; then
	sshd="$(command -v sshd 2>/dev/null || true)"
fi
if [ -z "$sshd" ]; then
	echo "` + noSSHDMarker + ` (looked in /usr/sbin, /usr/bin, /sbin, /usr/local/sbin, /usr/local/bin and PATH); use an image with OpenSSH's sshd" >&2
	exit 127
fi

# A status left from the container's last start is not this start's.
rm -f /.suanli/onstart-exit

mkdir -p /root/.ssh
cp /.suanli/authorized_keys /root/.ssh/authorized_keys
chown -R 0:0 /root/.ssh
chmod 0700 /root /root/.ssh
chmod 0600 /root/.ssh/authorized_keys

if command -v ssh-keygen >/dev/null 2>&1; then
	ssh-keygen -A >/dev/null
fi
mkdir -p /run/sshd /var/empty
chmod 0755 /run/sshd

# The container's environment (the image's, the renter's, the launcher's)
# for login shells, as export -p quotes it (a value may hold spaces,
# quotes, $ or newlines), without what belongs to a session; a subshell
# drops those, as a filter on lines would cut a value that spans lines.
# It holds the renter's secrets: root's only (only root logs in), made
# anew, within the subshell, so that its umask sets the mode.
if [ -d /etc/profile.d ]; then
	rm -f /etc/profile.d/00-suanli-env.sh 2>/dev/null || true
	(umask 077; unset HOME HOSTNAME OLDPWD PWD SHLVL TERM _ 2>/dev/null || true; export -p > /etc/profile.d/00-suanli-env.sh) 2>/dev/null || true
fi

# Jupyter, when the image has it and the launcher gave a token: beside
# sshd, supervised by its own loop (/.suanli/jupyter).
rm -f /.suanli/jupyter-kind /.suanli/jupyter-exits
if [ -s /.suanli/jupyter-token ] && command -v jupyter >/dev/null 2>&1; then
	/bin/sh /.suanli/jupyter </dev/null &
fi

# The verifier (suanli-verify): the launcher's copy, on PATH unless the
# image ships its own, and its settings in a file of root's for the
# sessions that do not get this environment; run once now, in the
# background, when the launch asked for it (a platform image) and the
# renter did not opt out (/workspace/.suanli-no-verify).
(umask 077; env | grep '^SUANLI_VERIFY_' > /.suanli/verify.env || true)
if [ -d /usr/local/bin ] && ! command -v suanli-verify >/dev/null 2>&1; then
	ln -s /.suanli/verify /usr/local/bin/suanli-verify 2>/dev/null || true
fi
if [ "${SUANLI_VERIFY_AT_START:-}" = 1 ] && [ ! -e /workspace/.suanli-no-verify ]; then
	if command -v python3 >/dev/null 2>&1; then
		(python3 /.suanli/verify --at-start </dev/null >/.suanli/verify.log 2>&1; tail -n 1 /.suanli/verify.log >&2) &
	else
		echo "suanli-init: the image has no python3: the verifier cannot run at start" >&2
	fi
fi

# sshd beside this shell, which stays PID 1 so that a stop reaches every
# process: docker signals only PID 1, and the renter's jobs (started over
# SSH, in Jupyter) would otherwise be killed without a word. On SIGTERM
# (an interruption's grace, a stop) each process gets SIGTERM, and the
# container ends once they have all exited, or when docker's grace runs
# out (SIGKILL).
"$sshd" -D -e -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no &
sshd_pid=$!

# The renter's on-start script, on every start of the container, beside
# sshd once it listens (/.suanli/onstart-run); its status goes to
# /.suanli/onstart-exit (removed above, before sshd) when it ends.
if [ -s /.suanli/onstart ]; then
	/bin/sh /.suanli/onstart-run "$sshd_pid" </dev/null &
fi
alive() {
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = 1 ] && continue
		read -r _ _ st _ < "$p/stat" 2>/dev/null || continue
		[ "$st" = Z ] || return 0
	done
	return 1
}
on_term() {
	trap - TERM INT
	kill -TERM -1 2>/dev/null || true
	while alive; do sleep 0.2; done
	exit 0
}
trap on_term TERM INT
wait "$sshd_pid"
`

// Where the renter's on-start script, its log and its exit status are
// in a container.
const (
	onstartPath     = initDir + "/onstart"
	onstartExitPath = initDir + "/onstart-exit"
	onstartLogPath  = "/var/log/suanli-onstart.log"
)

// onstartScript runs the renter's on-start script (onstartPath), started
// by the init in the background each time the container starts. A
// launcher (vast.ai's, RunPod's) expects that: it runs on every boot of
// the container, and as the docker launcher makes a new container for
// every launch (a start after a stop is one), the script runs once per
// launch, and again whenever the daemon restarts the container (its
// restart policy: a crash, the host's reboot). It
//
//   - waits until sshd listens on port 22 (at most a minute), so that the
//     renter can log in while it runs: it is not PID 1 and blocks nothing;
//   - runs in /workspace (/ when there is none) with the container's
//     environment, the renter's variables included, stdin /dev/null; a
//     script with a #! line runs as that program, any other with bash
//     where the image has it, else sh;
//   - writes its output to the container's log, each line after
//     "onstart: " (what the rental's log shows), and as it is to
//     onstartLogPath (root's only, 0600), appended, between the lines
//     "suanli-init: onstart started" and "suanli-init: onstart exited N"
//     (in both);
//   - records the status N in onstartExitPath (removed by the init at
//     every start). A script that fails stops nothing.
//
// The status line is written when the script exits, even when programs
// it left in the background still write to the log.
const onstartScript = `#!/bin/sh
# Suanli's on-start runner, started by /.suanli/init: runs the renter's
# /.suanli/onstart once sshd listens.
set -u
sshd_pid="$1"
# sshd listens on port 22 (0016) once a socket in state LISTEN (0A) has it.
listens() {
	grep -Eqs '^ *[0-9]+: [0-9A-F]+:0016 [0-9A-F]+:[0-9A-F]+ 0A ' /proc/net/tcp /proc/net/tcp6
}
i=0
while [ "$i" -lt 300 ] && kill -0 "$sshd_pid" 2>/dev/null && ! listens; do
	sleep 0.2
	i=$((i + 1))
done
cd /workspace 2>/dev/null || cd /
first=""
IFS= read -r first < ` + onstartPath + ` || true
case "$first" in
'#!'*) set -- ` + onstartPath + ` ;;
*) if command -v bash >/dev/null 2>&1; then set -- bash ` + onstartPath + `; else set -- /bin/sh ` + onstartPath + `; fi ;;
esac
# The log may show the renter's secrets: root's only, while the script
# keeps the init's umask.
log=` + onstartLogPath + `
mkdir -p "${log%/*}" 2>/dev/null
if (umask 077; : >> "$log") 2>/dev/null; then
	chmod 0600 "$log" 2>/dev/null || true
else
	log=/dev/null
fi
{
	echo "suanli-init: onstart started"
	"$@" 2>&1 </dev/null
	code=$?
	echo "$code" > ` + onstartExitPath + `.new && mv -f ` + onstartExitPath + `.new ` + onstartExitPath + `
	echo "suanli-init: onstart exited $code"
} | while IFS= read -r line || [ -n "$line" ]; do
	printf '%s\n' "$line" >> "$log"
	case "$line" in
	"suanli-init: onstart started" | "suanli-init: onstart exited "*) printf '%s\n' "$line" >&2 ;;
	*) printf 'onstart: %s\n' "$line" >&2 ;;
	esac
done
`

// JupyterPort is the port the launcher's Jupyter listens on, on the
// container's addresses: no port of the host is published for it, and on
// the workloads network (DefaultNetwork) only this host reaches it, which
// is where the agent's tunnel passes the renter's browser in.
const JupyterPort = workload.JupyterPort

// jupyterTokenPath is the file in the container that holds the rental's
// Jupyter token (root's only). Jupyter reads it itself
// (JUPYTER_TOKEN_FILE), so the token is in no command line and no
// environment; the agent reads it back (JupyterToken) for its tunnel.
const jupyterTokenPath = initDir + "/jupyter-token"

// jupyterScript supervises Jupyter in the container: it picks JupyterLab
// if the image has it (jupyter-lab), else the classic Notebook
// (jupyter-notebook), says which in /.suanli/jupyter-kind, and runs it as
// root in /workspace on the container's addresses under the rental's
// base URL, starting it again when it exits (as the restart policy does for
// sshd). It logs to the container's log; Jupyter shows a
// token that came from a file as "...", so the token stays out of it.
// @PORT@ and @BASE@ are filled in by initArchive.
const jupyterScript = `#!/bin/sh
# Suanli's Jupyter supervisor, started by /.suanli/init.
set -u
# jupyter runs "jupyter SUB" as the program jupyter-SUB, found beside
# jupyter or on PATH; looking for it is a second faster than asking
# "jupyter SUB --version", which loads the whole server.
has() {
	command -v "jupyter-$1" >/dev/null 2>&1 || [ -x "$(dirname "$(command -v jupyter)")/jupyter-$1" ]
}
if has lab; then
	kind=lab
elif has notebook; then
	kind=notebook
else
	echo "suanli-init: jupyter has neither lab nor notebook; not starting it" >&2
	echo none > /.suanli/jupyter-kind.new && mv /.suanli/jupyter-kind.new /.suanli/jupyter-kind
	exit 0
fi
echo "$kind" > /.suanli/jupyter-kind.new && mv /.suanli/jupyter-kind.new /.suanli/jupyter-kind
cd /workspace
export JUPYTER_TOKEN_FILE=/.suanli/jupyter-token
while :; do
	jupyter "$kind" --ip=0.0.0.0 --port=@PORT@ --port-retries=0 --no-browser --allow-root \
		--notebook-dir=/workspace --ServerApp.base_url=@BASE@ --NotebookApp.base_url=@BASE@
	echo "suanli-init: jupyter $kind exited with status $?; starting it again in 2 s" >&2
	echo x >> /.suanli/jupyter-exits
	sleep 2
done
`

// jupyterReadyScript is what the launcher runs in the container to see
// whether Jupyter answers: status 0 with the kind on stdout once a GET of
// its authenticated /api/status with the token succeeds, 3 when the
// image has no Jupyter, 4 when it exited jupyterGiveUp times without
// answering (a broken install: the launch need not wait longer),
// anything else while it is not (yet) answering.
// It uses the image's Python, which Jupyter itself runs on.
const jupyterReadyScript = `#!/bin/sh
# Suanli's Jupyter probe: prints the kind once Jupyter answers.
kind="$(cat /.suanli/jupyter-kind 2>/dev/null || true)"
case "$kind" in
none) exit 3 ;;
lab|notebook) ;;
*) if command -v jupyter >/dev/null 2>&1; then exit 1; else exit 3; fi ;;
esac
py="$(command -v python3 || command -v python || sed -n '1s/^#![[:space:]]*//p' "$(command -v jupyter)")"
exits=$(cat /.suanli/jupyter-exits 2>/dev/null | wc -l)
fail=1
if [ "$exits" -ge @GIVEUP@ ]; then fail=4; fi
$py - <<'EOF' || exit $fail
import urllib.request
token = open("/.suanli/jupyter-token").read()
req = urllib.request.Request("http://127.0.0.1:@PORT@@BASE@api/status", headers={"Authorization": "token " + token})
urllib.request.urlopen(req, timeout=2).read()
EOF
echo "$kind"
`

// jupyterGiveUp is how many times Jupyter may exit before the launch
// stops waiting for it (the supervisor goes on starting it).
const jupyterGiveUp = 3

// jupyterConf is what initArchive puts in the container for Jupyter; a
// zero one (no token) starts none.
type jupyterConf struct {
	Token   string
	BaseURL string
}

// initArchive is the tar CopyToContainer unpacks at "/": the init, the
// renter's key, with a Jupyter token the Jupyter supervisor, its probe
// and the token, and with an on-start script the script (root's only: it
// may hold secrets) and its runner, all owned by root.
func initArchive(sshPublicKey string, jc jupyterConf, onstart string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: initDir[1:] + "/", Mode: 0o755, ModTime: now}); err != nil {
		return nil, err
	}
	key := sshPublicKey
	if key != "" && key[len(key)-1] != '\n' {
		key += "\n"
	}
	type file struct {
		name string
		mode int64
		body string
	}
	files := []file{
		{initPath[1:], 0o755, initScript},
		{initDir[1:] + "/authorized_keys", 0o600, key},
		{verifyPath[1:], 0o755, verifyScript},
	}
	if jc.Token != "" {
		fill := strings.NewReplacer("@PORT@", strconv.Itoa(JupyterPort), "@BASE@", jc.BaseURL, "@GIVEUP@", strconv.Itoa(jupyterGiveUp))
		files = append(files, file{initDir[1:] + "/jupyter", 0o755, fill.Replace(jupyterScript)},
			file{initDir[1:] + "/jupyter-ready", 0o755, fill.Replace(jupyterReadyScript)},
			file{jupyterTokenPath[1:], 0o600, jc.Token})
	}
	if onstart != "" {
		files = append(files, file{initDir[1:] + "/onstart-run", 0o755, onstartScript},
			file{onstartPath[1:], 0o700, onstart})
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: now}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
