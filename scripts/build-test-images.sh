#!/usr/bin/env bash
# Builds the container images the docker launcher's tests run, on the
# test Docker daemon (SUANLI_TEST_DOCKER_HOST, else DOCKER_HOST, else the
# default socket). No registry is reachable in CI, so they are made here
# from Debian's packages: mmdebstrap makes a root filesystem and `docker
# import` turns it into an image. An image the daemon has already is
# kept; nothing is cached in the repository.
#
#   suanli-test/sshd:bookworm     Debian bookworm minbase + openssh-server
#                                 + python3, no CMD or ENTRYPOINT (~13 s)
#   suanli-test/jupyter:bookworm  the same + Debian's jupyter-notebook, for
#                                 the browser-access tests (~26 s)
#
# Both are platform images: they ship the verifier (suanli-verify, the
# launcher's agent/docker/verify.py) at /usr/local/bin/suanli-verify. Other
# images, the catalogue's included, get it from the launcher, which copies
# it into every container and links it there when the image has none.
#
# Needs root (mmdebstrap) and the Debian packages docker.io and mmdebstrap.
set -euo pipefail

host="${SUANLI_TEST_DOCKER_HOST:-${DOCKER_HOST:-unix:///var/run/docker.sock}}"
# Debian's client, which matches its daemon; another on PATH may not.
docker_bin=/usr/bin/docker
[ -x "$docker_bin" ] || docker_bin=docker
docker_() { "$docker_bin" -H "$host" "$@"; }

sshd_image="${SUANLI_TEST_SSHD_IMAGE:-suanli-test/sshd:bookworm}"
jupyter_image="${SUANLI_TEST_JUPYTER_IMAGE:-suanli-test/jupyter:bookworm}"

verifier="$(cd "$(dirname "$0")/.." && pwd)/agent/docker/verify.py"
[ -r "$verifier" ] || { echo "no verifier at $verifier" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# build IMAGE PACKAGES: a bookworm minbase root filesystem with the
# packages, imported as IMAGE, unless the daemon has it already.
build() {
  local image="$1" packages="$2"
  if docker_ image inspect "$image" >/dev/null 2>&1; then
    echo "--- test image $image: already on $host"
    return
  fi
  local start
  start=$(date +%s)
  mmdebstrap --quiet --variant=minbase --include="$packages" \
    --customize-hook="install -D -m 0755 '$verifier' \"\$1/usr/local/bin/suanli-verify\"" \
    bookworm "$tmp/rootfs.tar"
  docker_ import "$tmp/rootfs.tar" "$image" >/dev/null
  rm -f "$tmp/rootfs.tar"
  echo "--- test image $image: built in $(( $(date +%s) - start )) s"
}

build "$sshd_image" openssh-server,python3
build "$jupyter_image" openssh-server,python3,jupyter-notebook
