#!/usr/bin/env bash
# One capacity run for one catalogue size (docs/capacity.md): builds the
# binary and the churn driver, seeds the demo market plus SCALE synthetic
# offers (once per data directory: later runs reuse it), starts `serve
# --demo`, times its start-up to a loaded offer index, then
#   1. scripts/load.sh on a quiet server,
#   2. scripts/load.sh again while scripts/churn rents and stops demo
#      offers (RATE rents and RATE stops a second),
# printing the server's RSS after each, and stops the server.
#
#   scripts/capacity-run.sh                 # demo only (43 offers), SQLite
#   SCALE=100000 scripts/capacity-run.sh    # + 100k synthetic offers
#   SCALE=1000000 DURATION=30s scripts/capacity-run.sh
#   DATABASE_URL='postgres://postgres@127.0.0.1:5432/suanli_load?sslmode=disable' SCALE=100000 scripts/capacity-run.sh
#
# Settings (environment): SCALE (0), DURATION (15s, each wrk run), THREADS
# (2), CONNS (32), RATE (10), HOLD (2s, a rental's life before its stop),
# TOKENS (8 renter tokens: the default --api-write-rate is 5 a second per
# token), PORT (18080), WORK (/tmp/suanli-capacity: binaries, data
# directories, logs), DATABASE_URL (empty: SQLite in
# WORK/sqlite-SCALE; a PostgreSQL URL: its database must exist, and is
# migrated and seeded once), SKIP_BUILD=1 (reuse WORK's binaries),
# SERVE_ARGS (more flags for serve, e.g. --pprof-addr 127.0.0.1:6060),
# WARMUP (3s of churn before its load run), NO_CHURN=1 (quiet run only).
# GOGC and the other variables reach serve as they are.
#
# Start-up is timed from the exec of `serve` to the first /healthz answer:
# serve opens its listener only after the offer index's first full load
# (main.go: index.Refresh before net.Listen), so that is the time to a
# loaded index; the "serving" log line says how many offers it holds.
#
# The last lines are machine-readable (RESULT …) for the figures.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scale="${SCALE:-0}"
port="${PORT:-18080}"
rate="${RATE:-10}"
hold="${HOLD:-2s}"
ntokens="${TOKENS:-8}"
warmup="${WARMUP:-3}"; warmup="${warmup%s}"
work="${WORK:-/tmp/suanli-capacity}"
base="http://127.0.0.1:$port"
mkdir -p "$work"
bin="$work/suanli"
churn="$work/churn"

if [[ -n "${DATABASE_URL:-}" ]]; then
  db="pg-$(sed -E 's#.*/([^/?]+)(\?.*)?$#\1#' <<<"$DATABASE_URL")-$scale"
  data="$work/$db"
  dbflags=(--database-url "$DATABASE_URL")
else
  data="$work/sqlite-$scale"
  dbflags=(--data-dir "$data")
fi
mkdir -p "$data"
log="$data/serve.log"

serve_pid="" churn_pid=""
cleanup() {
  if [[ -n "$churn_pid" ]] && kill -0 "$churn_pid" 2>/dev/null; then kill -TERM "$churn_pid"; wait "$churn_pid" || true; fi
  if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then kill -TERM "$serve_pid"; wait "$serve_pid" || true; fi
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

if [[ "${SKIP_BUILD:-}" != 1 ]]; then
  echo "== build ($bin, $churn)"
  (cd "$root" && go build -o "$bin" . && go build -o "$churn" ./scripts/churn) 2>&1 \
    | grep -v "warning\|note:\|cgo-gcc\|^ *|\|In file\|nvml.h" || true
fi
[[ -x "$bin" && -x "$churn" ]] || { echo "capacity-run: no binaries in $work" >&2; exit 1; }

# Seed once per data directory: the demo first (its offers get the lowest
# ids, where the churn driver looks for them), then the synthetic ones.
if [[ ! -e "$data/.seeded" ]]; then
  if [[ -n "${DATABASE_URL:-}" ]]; then "$bin" migrate "${dbflags[@]}" 2>>"$data/seed.log"; fi
  echo "== seed: demo + $scale synthetic offers ($data/seed.log)"
  t=$(now)
  "$bin" seed --demo "${dbflags[@]}" 2>>"$data/seed.log"
  if (( scale > 0 )); then "$bin" seed --scale "$scale" "${dbflags[@]}" 2>>"$data/seed.log"; fi
  echo "seeded in $(since "$t") s"
  touch "$data/.seeded"
fi
[[ -d "$data" && -e "$data/suanli.db" ]] && du -sh "$data/suanli.db"* 2>/dev/null | sed 's/^/database file: /' || true

# A renter with balance and tokens for the churn driver (once).
email="churn@load.suanli.test"
if [[ ! -s "$data/churn-tokens" ]]; then
  echo "== renter $email: $ntokens tokens, ¥500,000 of credit"
  # (It may exist already, made by an earlier run on this database.)
  head -c 18 /dev/urandom | base64 | "$bin" admin create-user --email "$email" --password-file - "${dbflags[@]}" 2>>"$data/seed.log" >/dev/null || true
  "$bin" admin credit --email "$email" --fen 50000000 --reason "load test" "${dbflags[@]}" 2>>"$data/seed.log" >/dev/null
  for i in $(seq "$ntokens"); do
    "$bin" admin token --email "$email" --name "churn-$i" "${dbflags[@]}" 2>>"$data/seed.log"
  done | paste -sd, >"$data/churn-tokens"
fi

echo "== serve --demo on $base (log: $log)"
t=$(now)
# shellcheck disable=SC2086 # SERVE_ARGS is a list of flags
"$bin" serve --demo --addr "127.0.0.1:$port" --base-url "$base" "${dbflags[@]}" ${SERVE_ARGS:-} >"$log" 2>&1 &
serve_pid=$!
until curl -fsS -o /dev/null "$base/healthz" 2>/dev/null; do
  kill -0 "$serve_pid" 2>/dev/null || { echo "capacity-run: serve exited; the end of $log:" >&2; tail -20 "$log" >&2; exit 1; }
  sleep 0.05
done
startup=$(since "$t")
offers="$(grep -m1 -o 'msg=serving.* offers=[0-9]*' "$log" | grep -o 'offers=[0-9]*' | cut -d= -f2 || true)"
echo "start-up to a loaded index: $startup s ($offers offers listed)"
rss() { "$root/scripts/rss.sh" "$serve_pid"; }
mb() { "$root/scripts/rss.sh" "$serve_pid" | awk '{ print $4 "/" $7 }'; }
echo "RSS at start: $(rss)"
rss_start="$(mb)"
# The demo's simulated agents register just after the listener opens.
sleep 2

echo
echo "== 1. quiet: scripts/load.sh"
"$root/scripts/load.sh" "$base" | tee "$data/load-quiet.txt"
echo "RSS after the quiet load: $(rss)"
rss_quiet="$(mb)"
quiet="$(grep '^RESULT' "$data/load-quiet.txt" | cut -d' ' -f2-)"

if [[ "${NO_CHURN:-}" != 1 ]]; then
  echo
  echo "== 2. churn: $rate rents/s and $rate stops/s on the demo offers, then scripts/load.sh"
  "$churn" -base "$base" -token "$(cat "$data/churn-tokens")" -rate "$rate" -hold "$hold" -report 0 \
    >"$data/churn.txt" 2>"$data/churn.log" &
  churn_pid=$!
  sleep "$warmup"
  kill -0 "$churn_pid" 2>/dev/null || { echo "capacity-run: churn exited:" >&2; cat "$data/churn.log" "$data/churn.txt" >&2; exit 1; }
  "$root/scripts/load.sh" "$base" | tee "$data/load-churn.txt"
  echo "RSS after the load under churn: $(rss)"
  rss_churn="$(mb)"
  kill -TERM "$churn_pid"
  wait "$churn_pid" || echo "!! churn ended with an error (see $data/churn.log)" >&2
  churn_pid=""
  cat "$data/churn.log" "$data/churn.txt"
  echo "RSS after the churn's release: $(rss)"
  churned="$(grep '^RESULT' "$data/load-churn.txt" | cut -d' ' -f2-)"
  churn_result="$(grep '^RESULT' "$data/churn.txt" | cut -d' ' -f2- || true)"
fi

echo
echo "== summary (SCALE=$scale, $([[ -n "${DATABASE_URL:-}" ]] && echo PostgreSQL || echo SQLite), wrk -t${THREADS:-2} -c${CONNS:-32} -d${DURATION:-15s})"
echo "RESULT startup_s=$startup offers=$offers rss_start_mb=$rss_start"
echo "RESULT quiet $quiet rss_mb=$rss_quiet"
if [[ -n "${churned:-}" ]]; then
  field() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2 }'; }
  share="$(awk -v a="$(field "$churned" page_rps)" -v b="$(field "$quiet" page_rps)" 'BEGIN { printf "%.3f", (b > 0) ? a / b : 0 }')"
  echo "RESULT churn $churned rss_mb=$rss_churn page_rps_vs_quiet=$share"
  echo "RESULT churn_driver $churn_result"
  # Over the whole churn run (warm-up and the first hold included): a rate
  # well below the target means the server could not take the writes
  # while under read load, and the figures under churn are not at RATE.
  if awk -v r="$rate" -v a="$(field "$churn_result" rent_ok_per_s)" -v s="$(field "$churn_result" stop_ok_per_s)" \
       'BEGIN { exit !(a < 0.9 * r || s < 0.9 * r) }'; then
    echo "!! the churn fell behind: $(field "$churn_result" rent_ok_per_s) rents/s and $(field "$churn_result" stop_ok_per_s) stops/s succeeded of $rate each (see $data/churn.txt)" >&2
  fi
fi
echo "(rss_mb: VmRSS/VmHWM in MB; ratio: page req/s ÷ /healthz req/s in the same run)"
