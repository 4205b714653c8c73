#!/usr/bin/env bash
# Load test of the offer list against a running server (see
# docs/capacity.md): /healthz, the issue's benchmark page, and a mix of
# searches, each with wrk -tTHREADS -cCONNS for DURATION, one after the
# other; then the page's throughput as a share of /healthz's in the same
# run (the machine-independent figure) and the page's p99.
# Needs wrk (apt-get install wrk). Loopback only.
#   scripts/load.sh [BASE_URL]          THREADS=2 CONNS=32 DURATION=15s
# The last line is machine-readable:
#   RESULT healthz_rps=… page_rps=… ratio=… page_p50_ms=… page_p99_ms=… mix_rps=… mix_p99_ms=… errors=…
set -euo pipefail
base="${1:-http://127.0.0.1:8080}"
threads="${THREADS:-2}"
conns="${CONNS:-32}"
dur="${DURATION:-15s}"
page="/offers?gpu=h100-sxm&city=chengdu&sort=price"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# rps FILE: wrk's Requests/sec. p FILE PCT: that latency percentile in ms
# (wrk writes us, ms or s). errs FILE: non-2xx answers plus socket errors.
rps() { awk '/^Requests\/sec:/ { print $2 }' "$1"; }
p() {
  awk -v pct="$2%" '$1 == pct {
    v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    f = (u == "us") ? 0.001 : (u == "s") ? 1000 : (u == "m") ? 60000 : 1
    printf "%.2f\n", v * f }' "$1"
}
errs() {
  awk '/Non-2xx or 3xx responses:/ { n += $NF }
       /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 }
       END { print n + 0 }' "$1"
}
one() { # NAME wrk-args…: runs wrk, shows its figures, keeps its output
  local name="$1"; shift
  wrk -t"$threads" -c"$conns" -d"$dur" --latency "$@" >"$out/$name"
  grep -E "Requests/sec|  50%|  90%|  99%|Non-2xx|Socket errors" "$out/$name" || true
}

echo "== /healthz  (wrk -t$threads -c$conns -d$dur)"
one healthz "$base/healthz"
echo "== $page"
one page "$base$page"
echo "== mixed searches (scripts/offers-mix.lua)"
one mix -s "$here/offers-mix.lua" "$base"

h="$(rps "$out/healthz")"; g="$(rps "$out/page")"; m="$(rps "$out/mix")"
ratio="$(awk -v g="$g" -v h="$h" 'BEGIN { printf "%.3f", (h > 0) ? g / h : 0 }')"
e=$(( $(errs "$out/healthz") + $(errs "$out/page") + $(errs "$out/mix") ))
echo "== page ÷ /healthz: $ratio  (page $g req/s, /healthz $h req/s; page p50 $(p "$out/page" 50) ms, p99 $(p "$out/page" 99) ms)"
if (( e > 0 )); then echo "!! $e non-2xx answers or socket errors: the throughput figures above are not clean" >&2; fi
echo "RESULT healthz_rps=$h page_rps=$g ratio=$ratio page_p50_ms=$(p "$out/page" 50) page_p99_ms=$(p "$out/page" 99) mix_rps=$m mix_p99_ms=$(p "$out/mix" 99) errors=$e"
