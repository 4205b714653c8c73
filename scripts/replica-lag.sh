#!/usr/bin/env bash
# How long an offer change made through one web replica takes to show on
# another (docs/scaleout.md: every replica keeps its own offer index). Two
# `serve` processes on one PostgreSQL database: A (`serve --demo`: workers,
# the demo's simulated agents and its provider user) and B (`serve
# --workers=false`). TRIALS times, the demo provider changes one offer's
# price through A's API (PATCH /api/v1/provider/offers/{id}), and both
# replicas' offer search (GET /api/v1/offers?gpu=…&city=…&max_price=…,
# served from their index) is polled every POLL_MS until it shows the new
# price; the lag is from sending the PATCH. Then the offer's prices go back.
#
#   createdb -h 127.0.0.1 -U postgres suanli_lag
#   DATABASE_URL='postgres://postgres@127.0.0.1:5432/suanli_lag?sslmode=disable' scripts/replica-lag.sh
#   dropdb -h 127.0.0.1 -U postgres suanli_lag
#
# Settings (environment): DATABASE_URL (required, an existing database:
# migrated and seeded once), SCALE (0 synthetic offers beside the demo),
# TRIALS (10), POLL_MS (10), GAP (1s: the pause after a trial, stretched
# at random up to twice that, so that changes fall at every phase of a
# periodic refresh), PORT_A (18081),
# PORT_B (18082), WORK (/tmp/suanli-capacity), SKIP_BUILD=1 (reuse
# WORK/suanli), CHURN=1 (also run scripts/churn on A meanwhile: the lag
# under load; needs the renter made by capacity-run.sh or makes one).
# Last line: RESULT lag_b_ms_median=… lag_b_ms_max=… lag_a_ms_max=…
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL database of your own (createdb …)}"
scale="${SCALE:-0}"
work="${WORK:-/tmp/suanli-capacity}"
pa="${PORT_A:-18081}" pb="${PORT_B:-18082}"
a="http://127.0.0.1:$pa" b="http://127.0.0.1:$pb"
bin="$work/suanli" churn="$work/churn"
data="$work/lag-$(sed -E 's#.*/([^/?]+)(\?.*)?$#\1#' <<<"$DATABASE_URL")-$scale"
mkdir -p "$data"
dbflags=(--database-url "$DATABASE_URL")

pids=()
cleanup() {
  for p in "${pids[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p"; wait "$p" || true; fi
  done
}
trap cleanup EXIT

if [[ "${SKIP_BUILD:-}" != 1 ]]; then
  echo "== build ($bin, $churn)"
  (cd "$root" && go build -o "$bin" . && go build -o "$churn" ./scripts/churn) 2>&1 \
    | grep -v "warning\|note:\|cgo-gcc\|^ *|\|In file\|nvml.h" || true
fi
"$bin" migrate "${dbflags[@]}" 2>>"$data/seed.log"
if [[ ! -e "$data/.seeded" ]]; then
  echo "== seed: demo + $scale synthetic offers"
  "$bin" seed --demo "${dbflags[@]}" 2>>"$data/seed.log"
  if (( scale > 0 )); then "$bin" seed --scale "$scale" "${dbflags[@]}" 2>>"$data/seed.log"; fi
  touch "$data/.seeded"
fi

up() { # NAME URL: waits for /healthz
  until curl -fsS -o /dev/null "$2/healthz" 2>/dev/null; do
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || { echo "replica-lag: a replica exited; see $data/$1.log" >&2; tail -5 "$data"/*.log >&2; exit 1; }; done
    sleep 0.05
  done
}
echo "== replica A (serve --demo) on $a, replica B (serve --workers=false) on $b; logs in $data"
"$bin" serve --demo --addr "127.0.0.1:$pa" --base-url "$a" "${dbflags[@]}" >"$data/a.log" 2>&1 &
pids+=($!)
up a "$a"
"$bin" serve --workers=false --addr "127.0.0.1:$pb" --base-url "$b" "${dbflags[@]}" >"$data/b.log" 2>&1 &
pids+=($!)
up b "$b"
grep -h -o 'index-refresh[^ ]*\|msg=serving.*offers=[0-9]*' "$data/a.log" "$data/b.log" | sed 's/^/  /' || true

token="$("$bin" admin token --email provider@demo.suanli.test --name "lag-$$" "${dbflags[@]}" 2>>"$data/seed.log")"

if [[ "${CHURN:-}" == 1 ]]; then
  if [[ ! -s "$data/churn-tokens" ]]; then
    email="churn@load.suanli.test"
    head -c 18 /dev/urandom | base64 | "$bin" admin create-user --email "$email" --password-file - "${dbflags[@]}" >/dev/null 2>>"$data/seed.log" || true
    "$bin" admin credit --email "$email" --fen 50000000 --reason "load test" "${dbflags[@]}" >/dev/null 2>>"$data/seed.log"
    for i in $(seq 8); do "$bin" admin token --email "$email" --name "churn-$i" "${dbflags[@]}" 2>>"$data/seed.log"; done | paste -sd, >"$data/churn-tokens"
  fi
  "$churn" -base "$a" -token "$(cat "$data/churn-tokens")" -rate "${RATE:-10}" -report 0 >"$data/churn.txt" 2>"$data/churn.log" &
  pids+=($!)
  sleep 3
fi

A="$a" B="$b" TOKEN="$token" TRIALS="${TRIALS:-10}" POLL_MS="${POLL_MS:-10}" GAP="${GAP:-1s}" python3 - <<'PY'
import json, os, random, statistics, sys, time, urllib.request

a, b, token = os.environ["A"], os.environ["B"], os.environ["TOKEN"]
trials, poll, gap = int(os.environ["TRIALS"]), int(os.environ["POLL_MS"]) / 1000, float(os.environ["GAP"].rstrip("s"))

def call(method, url, body=None, auth=False):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if auth:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)

offers = call("GET", a + "/api/v1/provider/offers?per_page=200", auth=True)["offers"]
offer = next(o for o in offers if o.get("status") == "listed")
oid = offer["id"]
keep = {k: offer[k] for k in ("price_per_gpu_hour_fen", "weekly_price_per_gpu_fen", "monthly_price_per_gpu_fen", "interruptible_floor_per_gpu_hour_fen")}
pub = call("GET", f"{a}/api/v1/offers/{oid}")
gpu, city = pub["gpu"]["slug"], pub["datacenter"]["city"]
# The search, not GET /api/v1/offers/{id} (that reads the database): the
# offer is made the cheapest of its model and city (¥1.00 + i fen per GPU-hour,
# below every seeded price; its term prices and bid floor cleared, as the
# form requires them below the hourly price), so max_price=1.50 leaves it
# alone on page 1 whatever the catalogue's size.
search = f"/api/v1/offers?gpu={gpu}&city={city}&max_price=1.50&sort=price&per_page=50"
print(f"offer {oid} ({gpu}, {city}), price {keep['price_per_gpu_hour_fen']} fen; {trials} changes through A, polling {search} on A and B every {poll*1000:.0f} ms")

def shown(base):
    return {o["id"]: o["price_per_gpu_hour_fen"] for o in call("GET", base + search)["offers"]}.get(oid)

def change(price, clear=False):
    body = {"price_per_gpu_hour_fen": price}
    if clear:
        body.update(weekly_price_per_gpu_fen=None, monthly_price_per_gpu_fen=None, interruptible_floor_per_gpu_hour_fen=None)
    call("PATCH", f"{a}/api/v1/provider/offers/{oid}", body, auth=True)

lag_a, lag_b, answered = [], [], []
try:
    change(99, clear=True)
    for i in range(trials + 1):
        new = 100 + i
        t0 = time.monotonic()
        change(new)
        answered.append(time.monotonic() - t0)
        seen = {}
        while len(seen) < 2:
            for name, base in (("A", a), ("B", b)):
                if name not in seen and shown(base) == new:
                    seen[name] = time.monotonic() - t0
            if time.monotonic() - t0 > 60:
                sys.exit(f"change {i}: not visible after 60 s (seen: {seen})")
            if len(seen) < 2:
                time.sleep(poll)
        if i == 0:
            continue  # the first change waits out the preparing one
        lag_a.append(seen["A"]); lag_b.append(seen["B"])
        print(f"trial {i:2}: PATCH answered {answered[-1]*1000:7.1f} ms, in A's search after {seen['A']*1000:7.1f} ms, in B's after {seen['B']*1000:7.1f} ms")
        time.sleep(gap * (1 + random.random()))  # a random phase against the refresh
finally:
    call("PATCH", f"{a}/api/v1/provider/offers/{oid}", keep, auth=True)

answered = answered[1:]
ms = lambda s: f"{s*1000:.0f}"
print(f"lag on B (the other replica): median {ms(statistics.median(lag_b))} ms, max {ms(max(lag_b))} ms; on A: median {ms(statistics.median(lag_a))} ms, max {ms(max(lag_a))} ms")
print(f"RESULT lag_b_ms_median={ms(statistics.median(lag_b))} lag_b_ms_max={ms(max(lag_b))} lag_a_ms_median={ms(statistics.median(lag_a))} lag_a_ms_max={ms(max(lag_a))} patch_ms_median={ms(statistics.median(answered))}")
PY
if [[ "${CHURN:-}" == 1 ]]; then
  kill -TERM "${pids[2]}"; wait "${pids[2]}" || true
  cat "$data/churn.log" "$data/churn.txt"
fi
