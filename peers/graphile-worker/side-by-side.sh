#!/usr/bin/env bash
# leasehold and graphile-worker draining the same backlog on one PostgreSQL server, in the
# same minutes: for each process count N, N graphile-worker workers (concurrency 10 each)
# then N leasehold authorities (`bench work --processes`), each into a fresh database.
#   peers/graphile-worker/side-by-side.sh BINARY PG_URL_WITHOUT_DB [ITEMS] [COUNTS...]
#   e.g. side-by-side.sh target/release/leasehold postgres://postgres@127.0.0.1:5432 20000 1 2 4 8
# Prints one line per side and count: drain /s, lock (claim) → complete p50 / p99 / max.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"; server="$2"; items="${3:-20000}"; shift 3 || shift $#
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8)
[ -d "$here/node_modules/graphile-worker" ] || (cd "$here" && npm install --no-audit --no-fund >/dev/null)
run_id="$$"

fresh_db() {
  psql -q "$server/postgres" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >/dev/null 2>&1
}

for n in "${counts[@]}"; do
  db="gw_${run_id}_$n"
  fresh_db "$db"
  DATABASE_URL="$server/$db" node "$here/drain.js" enqueue "$items"
  out="$(mktemp)"
  for _ in $(seq "$n"); do
    DATABASE_URL="$server/$db" node "$here/drain.js" work >>"$out" &
  done
  wait
  python3 - "$out" "$n" "$items" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
lat = sorted(x for r in rows for x in r["latencies"])
span = (max(r["last"] for r in rows) - min(r["first"] for r in rows)) / 1000
pick = lambda p: lat[max(0, -(-len(lat) * p // 100) - 1)]
print(f"graphile-worker  N={sys.argv[2]}  drain {len(lat) / span:,.0f} /s  "
      f"lock→complete p50 {pick(50)} ms  p99 {pick(99)} ms  max {lat[-1]} ms  ({len(lat)} of {sys.argv[3]})")
PY
  rm -f "$out"
  db="lh_${run_id}_$n"
  fresh_db "$db"
  "$bin" bench work --store "$server/$db" --items "$items" --processes --authorities "$n" --json >"$out"
  python3 - "$out" "$n" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["results"]
print(f"leasehold        N={sys.argv[2]}  drain {m['drainPerSec']:,.0f} /s  "
      f"claim→complete p50 {m['claimToCompleteP50Ms']:.0f} ms  p99 {m['claimToCompleteP99Ms']:.0f} ms  "
      f"max {m.get('claimToCompleteMaxMs', 0):.0f} ms")
PY
  rm -f "$out"
  psql -q "$server/postgres" -c "DROP DATABASE gw_${run_id}_$n" -c "DROP DATABASE $db" >/dev/null 2>&1
done
