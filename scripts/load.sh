#!/usr/bin/env bash
# Load test of the offer list against a running server (see the README's
# "Speed" section): /healthz, the issue's benchmark page, and a mix of
# searches. Needs wrk (apt-get install wrk). Loopback only.
set -euo pipefail
base="${1:-http://127.0.0.1:8080}"
threads="${THREADS:-1}"
dur="${DURATION:-15s}"
here="$(cd "$(dirname "$0")" && pwd)"
echo "== /healthz"
wrk -t"$threads" -c32 -d"$dur" --latency "$base/healthz" | grep -E "Requests/sec|50%|90%|99%"
echo "== /offers?gpu=h100-sxm&city=chengdu&sort=price"
wrk -t"$threads" -c32 -d"$dur" --latency "$base/offers?gpu=h100-sxm&city=chengdu&sort=price" | grep -E "Requests/sec|50%|90%|99%"
echo "== mixed searches"
wrk -t"$threads" -c32 -d"$dur" --latency -s "$here/offers-mix.lua" "$base" | grep -E "Requests/sec|50%|90%|99%|Non-2xx"
