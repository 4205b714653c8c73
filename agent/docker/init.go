package docker

import (
	"archive/tar"
	"bytes"
	"time"
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
// sessions with a clean environment), and runs sshd in the foreground as
// PID 1, logging to stderr (the container's log).
//
// The options on sshd's command line make the key work whatever the
// image's sshd_config says: root may log in with a key only, and no
// password is accepted.
const initScript = `#!/bin/sh
# Suanli's container init: installs the renter's SSH key and runs sshd.
set -eu
umask 022

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

if [ -d /etc/profile.d ]; then
	export -p | grep -Ev '^(export|declare -x) (HOME|HOSTNAME|OLDPWD|PWD|SHLVL|TERM|_)=' > /etc/profile.d/00-suanli-env.sh 2>/dev/null || true
fi

exec "$sshd" -D -e -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no
`

// initArchive is the tar CopyToContainer unpacks at "/": the init and
// the renter's key, owned by root.
func initArchive(sshPublicKey string) ([]byte, error) {
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
	for _, f := range []struct {
		name string
		mode int64
		body string
	}{
		{initPath[1:], 0o755, initScript},
		{initDir[1:] + "/authorized_keys", 0o600, key},
	} {
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
