#!/usr/bin/env python3
"""Drive Suanli as a multi-cloud launcher (SkyPilot, dstack) would: plain
HTTP and JSON, no client library, Python's standard library only.

    SUANLI_SERVER=http://localhost:8080 SUANLI_TOKEN=sk_... \
        python3 scripts/launcher-example.py [--cluster NAME] [--instance-type h100-sxm.2x]

It walks a launcher's provider calls against the API (docs/launchers.md
maps them): pull the catalogue (and again with If-None-Match: 304); pick an
instance type; launch two instances of it by type, labelled
cluster=NAME, each with an Idempotency-Key (retried once to show the
replay); find them by label; wait, bounded, until both run and print their
SSH endpoints; stop them; terminate (release) them; then fill the market
with the type until the API answers 409 no_capacity, and release what that
rented. Exit status 0 when every step went as a launcher expects, 1
otherwise (3: not enough balance).

Optional environment: SUANLI_SSH_PUBLIC_KEY (a public key line; default
~/.ssh/id_ed25519.pub, then id_rsa.pub, else a throwaway key nobody holds).
"""

import argparse
import base64
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

SERVER = os.environ.get("SUANLI_SERVER", "http://localhost:8080").rstrip("/")
TOKEN = os.environ.get("SUANLI_TOKEN", "")


class APIError(Exception):
    """An error answer of the API: {"error": {"code", "message", "param"}}."""

    def __init__(self, status, body):
        err = (body or {}).get("error", {}) if isinstance(body, dict) else {}
        self.status = status
        self.code = err.get("code", "")
        self.param = err.get("param", "")
        super().__init__(f"{status} {self.code}: {err.get('message', body)}")


def call(method, path, body=None, headers=None, expect=(200, 201)):
    """One request; waits out 429 (Retry-After) and retries, a few times.
    Returns (status, response headers, decoded JSON or None)."""
    data = json.dumps(body).encode() if body is not None else None
    for _ in range(20):
        req = urllib.request.Request(SERVER + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + TOKEN)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                raw = res.read()
                return res.status, res.headers, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            if e.code == 429:
                time.sleep(float(e.headers.get("Retry-After", "1")))
                continue
            if e.code in expect:  # 304 arrives as an HTTPError
                return e.code, e.headers, json.loads(raw) if raw else None
            try:
                decoded = json.loads(raw)
            except ValueError:
                decoded = raw.decode(errors="replace")
            raise APIError(e.code, decoded) from None
    raise APIError(429, {"error": {"code": "rate_limited", "message": "still rate limited"}})


def ssh_public_key():
    key = os.environ.get("SUANLI_SSH_PUBLIC_KEY", "").strip()
    if key:
        return key
    for name in ("id_ed25519.pub", "id_rsa.pub"):
        path = os.path.expanduser("~/.ssh/" + name)
        if os.path.exists(path):
            with open(path) as f:
                return f.read().strip()
    # A well-formed ed25519 public key whose private half nobody has: the
    # instances launch, but nobody can log in to them.
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + os.urandom(32)
    return "ssh-ed25519 " + base64.b64encode(blob).decode() + " launcher-example"


def catalog():
    """SkyPilot's catalog fetch: the whole market, then a revalidation."""
    status, headers, cat = call("GET", "/api/v1/catalog")
    etag = headers["ETag"]
    print(f"catalog: {len(cat['offers'])} offers at version {cat['version']}, ETag {etag}")
    status, _, body = call("GET", "/api/v1/catalog", headers={"If-None-Match": etag}, expect=(200, 304))
    if status != 304 or body is not None:
        raise SystemExit(f"catalog again with If-None-Match: {status}, want 304 and no body")
    print("catalog again with If-None-Match: 304 Not Modified")
    return cat


def pick_type(wanted):
    """An instance type with room for two instances: the one asked for, or
    the one with the fewest available (so that filling the market later
    is quick), then the cheapest."""
    _, _, body = call("GET", "/api/v1/instance-types")
    types = [t for t in body["instance_types"] if t["available_instances"] >= 2]
    if wanted:
        types = [t for t in types if t["name"] == wanted]
    if not types:
        raise SystemExit(f"no instance type {wanted or ''} with two instances available")
    types.sort(key=lambda t: (t["available_instances"], t["min_available_price_fen"], t["name"]))
    t = types[0]
    print(f"instance type: {t['name']} ({t['gpus']} x {t['gpu_name']}, {t['vram_gb']} GB each): "
          f"{t['available_instances']} available from ¥{t['min_available_price_fen'] / 100:.2f}/GPU-hour")
    return t


def launch(itype, name, labels, key, idem):
    """run_instances: one instance by type, with a spec and an
    Idempotency-Key (a retry after a lost answer gets the same rental)."""
    body = {"instance_type": itype, "name": name, "labels": labels, "ssh_public_key": key,
            "env": {"SKYPILOT_CLUSTER": labels["cluster"], "SKYPILOT_NODE": name},
            "onstart": "#!/bin/sh\necho \"$SKYPILOT_NODE is up\" > /tmp/onstart.log\n"}
    _, _, r = call("POST", "/api/v1/rentals", body, headers={"Idempotency-Key": idem})
    return r


def rentals_labelled(cluster):
    """query_instances: the cluster's instances, by label, every page."""
    out, page = [], 1
    while True:
        q = urllib.parse.urlencode({"label": "cluster=" + cluster, "page": page, "per_page": 200})
        _, _, body = call("GET", "/api/v1/rentals?" + q)
        out += body["rentals"]
        if len(out) >= body["total"]:
            return out
        page += 1


def wait_states(ids, want, limit, bad=("failed",)):
    """wait_instances: poll (gently: the API limits reads per token) until
    every rental is in one of the want states, bounded by limit seconds."""
    deadline, last = time.time() + limit, {}
    while True:
        done = True
        for rid in ids:
            _, _, r = call("GET", f"/api/v1/rentals/{rid}")
            if r["state"] != last.get(rid):
                print(f"  rental {rid}: {r['state']} — {r['status_message']}")
                last[rid] = r["state"]
            if r["state"] in bad:
                raise SystemExit(f"rental {rid} is {r['state']}: {r['status_message']}")
            done = done and r["state"] in want
        if done:
            return
        if time.time() > deadline:
            raise SystemExit(f"gave up after {limit}s waiting for {want}: {last}")
        time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cluster", default="example-" + uuid.uuid4().hex[:6], help="the cluster label")
    ap.add_argument("--instance-type", default="", help="the type to launch (default: picked from the market)")
    ap.add_argument("--wait", type=int, default=180, help="seconds to wait for each state")
    ap.add_argument("--no-fill", action="store_true", help="skip filling the market")
    args = ap.parse_args()
    if not TOKEN:
        raise SystemExit("set SUANLI_TOKEN (an API token, made on /account)")
    key = ssh_public_key()

    catalog()
    t = pick_type(args.instance_type)

    ids = []
    for i, role in enumerate(("head", "worker")):
        idem = str(uuid.uuid4())
        name = f"{args.cluster}-{role}"
        r = launch(t["name"], name, {"cluster": args.cluster, "role": role}, key, idem)
        again = launch(t["name"], name, {"cluster": args.cluster, "role": role}, key, idem)
        if again["id"] != r["id"]:
            raise SystemExit(f"the same Idempotency-Key rented twice: {r['id']} and {again['id']}")
        print(f"launched {name}: rental {r['id']} on offer {r['offer_id']} node {r['node']['id']} ({r['state']}); "
              f"the same Idempotency-Key again: rental {again['id']}")
        ids.append(r["id"])

    found = sorted(r["id"] for r in rentals_labelled(args.cluster))
    if found != sorted(ids):
        raise SystemExit(f"label cluster={args.cluster} finds {found}, want {sorted(ids)}")
    print(f"found by label cluster={args.cluster}: {found}")

    wait_states(ids, ("running",), args.wait)
    for rid in ids:
        _, _, r = call("GET", f"/api/v1/rentals/{rid}")
        ssh = r["ssh"]
        print(f"running: rental {rid} ssh {ssh['user']}@{ssh['host']} -p {ssh['port']}"
              f" (env_set {r['env_set']}, onstart_set {r['onstart_set']})")

    for rid in ids:  # stop_instances: the volume stays, GPU billing ends
        call("POST", f"/api/v1/rentals/{rid}/stop")
    wait_states(ids, ("stopped",), args.wait)
    print(f"stopped: {ids}")

    for rid in ids:  # terminate_instances: the container and the volume go
        call("POST", f"/api/v1/rentals/{rid}/release", {"delete_volume": True})
    wait_states(ids, ("released",), args.wait)
    print(f"terminated: {ids}")

    if args.no_fill:
        return 0
    fill = []
    try:
        for i in range(t["available_instances"] + 5):
            r = launch(t["name"], f"{args.cluster}-fill-{i}", {"cluster": args.cluster + "-fill"}, key, str(uuid.uuid4()))
            fill.append(r["id"])
        raise SystemExit(f"launched {len(fill)} instances of {t['name']} and never met no_capacity")
    except APIError as e:
        if e.status != 409 or e.code != "no_capacity":
            raise
        print(f"market full after {len(fill)} more: {e.status} {e.code} — a launcher tries another region or type")
    finally:
        for rid in fill:
            call("POST", f"/api/v1/rentals/{rid}/release", {"delete_volume": True})
        if fill:
            print(f"released the {len(fill)} filling instances")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except APIError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(3 if e.code == "insufficient_funds" else 1)
