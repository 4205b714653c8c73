#!/usr/bin/env bash
# Vendors xterm.js for the terminal page, pinned like htmx: the files in
# static/ are npm's, with a licence line on top and without the source-map
# comment (the maps are not vendored). Run it to move to another version
# (then change the names in views/rentalpages/workspace.templ), and check
# the tarballs' SHA-256 against the ones printed by the last run:
#   @xterm/xterm 6.0.0      908e66e04af6c8dc6b00dd3b54de088e2e81e5ed866284fd6c2fb3c2d1c7a3f6
#   @xterm/addon-fit 0.11.0 26003b4517a132b64e4ff228fd88a5fda3fff5e606c76093f6dcff772e9ecec0
set -euo pipefail
cd "$(dirname "$0")/.."
xterm="${XTERM_VERSION:-6.0.0}"
fit="${XTERM_FIT_VERSION:-0.11.0}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@xterm/xterm@$xterm" "@xterm/addon-fit@$fit" >/dev/null)
sha256sum "$tmp"/*.tgz
mkdir -p "$tmp/x" "$tmp/f"
tar xzf "$tmp/xterm-xterm-$xterm.tgz" -C "$tmp/x"
tar xzf "$tmp/xterm-addon-fit-$fit.tgz" -C "$tmp/f"
{ echo "/*! xterm.js $xterm (npm @xterm/xterm@$xterm, lib/xterm.js) | MIT License, Copyright (c) 2017-2019 The xterm.js authors | https://github.com/xtermjs/xterm.js */"
  grep -v '^//# sourceMappingURL' "$tmp/x/package/lib/xterm.js"; } > "static/xterm-$xterm.min.js"
{ echo "/*! @xterm/addon-fit $fit (npm, lib/addon-fit.js) | MIT License | https://github.com/xtermjs/xterm.js */"
  grep -v '^//# sourceMappingURL' "$tmp/f/package/lib/addon-fit.js"; } > "static/xterm-addon-fit-$fit.min.js"
{ echo "/*! xterm.js $xterm (npm @xterm/xterm@$xterm, css/xterm.css) | MIT License | https://github.com/xtermjs/xterm.js */"
  cat "$tmp/x/package/css/xterm.css"; } > "static/xterm-$xterm.css"
echo "vendored xterm.js $xterm and addon-fit $fit into static/"
