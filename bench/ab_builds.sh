#!/usr/bin/env bash
# bench/ab_builds.sh — issue 20: two builds of the server side by side on the
# default configuration (sealed, info), alternating A and B in each round,
# each alone on the machine (RESULTS §20). Per run: an open loop at RATE
# req/s for DURATION s after a 3 s warm-up (latency, the server's CPU over
# the DURATION s, the writer thread's voluntary context switches per
# second), then a closed loop at concurrency 64 for 8 s after 2 s; then
# every 2xx is checked against the rows in the database.
#
# B_SQL (optional): SQL run on B's freshly migrated database before it
# serves, for an ablation of one build against its own schema, e.g.
#   B_SQL="DROP INDEX inbox_key_id;" bench/ab_builds.sh target/release target/release
#
# Usage: [RATE=2000] [DURATION=15] [B_SQL=…] bench/ab_builds.sh DIR_A DIR_B [ROUNDS]
#        (each DIR holds `hookinbox` and `loadgen`; needs the sqlite3 shell)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
A=$(realpath "${1:?usage: bench/ab_builds.sh DIR_A DIR_B [ROUNDS]}")
B=$(realpath "${2:?usage: bench/ab_builds.sh DIR_A DIR_B [ROUNDS]}")
ROUNDS=${3:-3} RATE=${RATE:-2000} DURATION=${DURATION:-15}
SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')"
export LOADGEN_SECRET=$SECRET
WORK=$(mktemp -d)
trap 'kill -TERM "${spid:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
switches() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/task/$2/status"; }

run() { # DIR LABEL
    local bin=$1 label=$2 dir="$WORK/$2.$RANDOM"
    mkdir -p "$dir"
    bench_config "$dir/bench.toml" standard "$SECRET"
    if [[ $label == B && -n ${B_SQL:-} ]]; then
        timeout 60 "$bin/hookinbox" migrate --config "$dir/bench.toml" >/dev/null 2>&1
        sqlite3 "$dir/inbox.db" "$B_SQL"
    fi
    bench_serve "$bin" "$dir"
    local url=$URL tid c0 c1 s0 s1
    tid=$(grep -l '^sqlite-writer$' /proc/"$spid"/task/*/comm | head -1 | cut -d/ -f5)
    nice -n -10 timeout $((DURATION + 60)) "$bin/loadgen" --url "$url/hooks/bench" --scheme standard \
        --rate "$RATE" --duration $((DURATION + 3)) --warmup 3 --run-id "open-$label-$RANDOM" \
        --json "$dir/open.json" >/dev/null 2>&1 &
    local lpid=$!
    sleep 3
    c0=$(cpu_ticks "$spid") s0=$(switches "$spid" "$tid")
    sleep "$DURATION"
    c1=$(cpu_ticks "$spid") s1=$(switches "$spid" "$tid")
    wait "$lpid"
    nice -n -10 timeout 60 "$bin/loadgen" --url "$url/hooks/bench" --scheme standard --saturate \
        --concurrency 64 --duration 8 --warmup 2 --run-id "sat-$label-$RANDOM" \
        --json "$dir/sat.json" >/dev/null 2>&1
    kill -TERM "$spid"
    wait "$spid" 2>/dev/null || true
    spid=""
    python3 - "$label" "$dir" "$(((c1 - c0) * 100 / DURATION / $(getconf CLK_TCK)))" \
        "$(((s1 - s0) / DURATION))" "$(sqlite3 "$dir/inbox.db" 'SELECT count(*) FROM inbox')" <<'PY'
import json, sys
label, d, cpu, switches, rows = sys.argv[1:]
o, s = (json.load(open(f"{d}/{n}.json")) for n in ("open", "sat"))
acked = sum(r["ok"] + r["warmup_ok"] for r in (o, s))
l = o["latency_us"]
print(f"{label}  p50 {l['p50'] / 1000:5.2f}  p99 {l['p99'] / 1000:6.2f}  p99.9 {l['p99_9'] / 1000:6.2f} ms"
      f"  cpu {cpu:>3} %  writer switches/s {switches:>5}  c64 {s['ack_rate']:7.0f} acks/s"
      f"  2xx {acked} rows {rows}{'' if int(rows) >= acked else '  ROWS MISSING'}")
PY
    rm -rf "$dir"
}

for round in $(seq "$ROUNDS"); do
    echo "round $round"
    run "$A" A
    run "$B" B
done
