#!/usr/bin/env bash
# bench/run.sh — hookinbox against its no-storage baseline, in one run.
#
# Builds release binaries, then, for each round, runs the SAME load against
# `hookinbox serve` (SQLite, WAL, synchronous=FULL) and against `baseline`
# (the same ingress with a store that keeps nothing), alternating between the
# two so that the machine's noise falls on both alike:
#
#   (a) open loop at --rate req/s (default 2,000) for --duration s after
#       --warmup s: ack latency p50/p99/p99.9/max, errors;
#   (b) closed loop (`loadgen --saturate`) at each --concurrency: acks/s.
#
# Every measurement gets a fresh server process and, for hookinbox, a fresh
# database in a temporary directory. After each hookinbox measurement the
# server is stopped and its row count is compared with the number of 2xx the
# generator received (warmup included): a 2xx whose row is missing fails the
# run, so "durable acks/s" means acks whose rows are really committed.
#
# Raw results (loadgen JSON, per-run server facts, server logs) go to
# bench/out/<UTC timestamp>/ (gitignored); the summary tables are printed and
# written to summary.md and summary.json there. Everything runs on 127.0.0.1
# and stops by itself: every step has a time limit.
#
# Usage: bench/run.sh [--rounds N] [--rate R] [--duration S] [--warmup S]
#                     [--sat-duration S] [--sat-warmup S] [--concurrency "16 64"]
#                     [--quiet-wait S] [--quiet-max PCT] [--no-build] [--keep-db]
#
# The machine is shared: before each measurement the script waits (at most
# --quiet-wait s) until less than --quiet-max % of the CPUs were busy over one
# second, and it records how much CPU other processes used during each
# measurement ("others" in the tables), so noisy rounds can be recognised.
set -euo pipefail

ROUNDS=3
RATE=2000
DURATION=20
WARMUP=5
SAT_DURATION=15
SAT_WARMUP=3
CONCURRENCY="32 64 128"
BUILD=1
KEEP_DB=0
QUIET_WAIT=120 # most seconds to wait, before each measurement, for the machine to calm down
QUIET_MAX=25   # "calm": at most this % of all CPUs busy over one second

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while (($#)); do
    case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --sat-duration) SAT_DURATION=$2; shift 2 ;;
    --sat-warmup) SAT_WARMUP=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --keep-db) KEEP_DB=1; shift ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --quiet-max) QUIET_MAX=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$ROOT/bench"
BIN="$ROOT/target/release"
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 2; }

if ((BUILD)); then
    echo "== building release binaries" >&2
    (cd "$ROOT" && cargo build --release -p hookinbox -p hookinbox-bench)
fi
for b in hookinbox baseline loadgen; do
    [[ -x "$BIN/$b" ]] || { echo "missing $BIN/$b (run without --no-build)" >&2; exit 2; }
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$BENCH/out/$STAMP"
mkdir -p "$OUT/runs" "$OUT/logs"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookinbox-bench.XXXXXX")
SERVER_PID=""
RUN_SEQ=1 # makes every event id of the run unique (`--run-id` allows 32 characters)

cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    ((KEEP_DB)) || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A fresh secret per run, passed to loadgen through its environment (not argv).
LOADGEN_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export LOADGEN_SECRET

# Writes a config for one measurement into directory $1 (the DB lives beside it).
write_config() {
    cat >"$1/bench.toml" <<EOF
# Written by bench/run.sh for one measurement.
[server]
listen = "127.0.0.1:0"

[storage]
url = "sqlite://inbox.db"
# Deep enough that the open loop never sees 503 Overloaded from a full queue,
# and that saturation measures the writer, not the queue bound.
queue_capacity = 16384

[[endpoint]]
id = "bench"
provider = "lab"

[[endpoint.secret]]
version = "bench-1"
value = "$LOADGEN_SECRET"
EOF
}

# Starts binary $1 (hookinbox|baseline) with config dir $2; sets SERVER_PID and SERVER_URL.
start_server() {
    local kind=$1 dir=$2 log=$3
    local args=(--config "$dir/bench.toml" --listen 127.0.0.1:0)
    if [[ $kind == hookinbox ]]; then
        "$BIN/hookinbox" serve "${args[@]}" >"$dir/stdout" 2>"$log" &
    else
        "$BIN/baseline" "${args[@]}" >"$dir/stdout" 2>"$log" &
    fi
    SERVER_PID=$!
    local line=""
    for _ in $(seq 100); do
        line=$(grep -m1 -o 'listening on http://[0-9.:]*' "$dir/stdout" 2>/dev/null || true)
        [[ -n "$line" ]] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n "$line" ]] || { echo "$kind did not start; see $log" >&2; exit 1; }
    SERVER_URL="${line#listening on }"
}

# Stops the server (SIGTERM: graceful, the writer commits what is queued).
stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 300); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "server $SERVER_PID did not stop in 30 s; killing it" >&2
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# CPU seconds (user+system) per thread name of process $1, as JSON.
thread_cpu_json() {
    python3 - "$1" <<'PY'
import json, os, sys
pid = sys.argv[1]
hz = os.sysconf("SC_CLK_TCK")
threads = {}
for tid in os.listdir(f"/proc/{pid}/task"):
    try:
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
    except OSError:
        continue
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / hz
    entry = threads.setdefault(comm, {"threads": 0, "cpu_s": 0.0})
    entry["threads"] += 1
    entry["cpu_s"] = round(entry["cpu_s"] + cpu, 2)
print(json.dumps(threads))
PY
}

# Busy and total jiffies of all CPUs, from /proc/stat.
machine_jiffies() {
    awk '/^cpu /{busy = $2 + $3 + $4 + $7 + $8 + $9; print busy, busy + $5 + $6}' /proc/stat
}

# Waits (at most QUIET_WAIT s) for a second in which under QUIET_MAX % of the
# CPUs were busy; prints the seconds waited and the last busy %.
wait_for_quiet() {
    local waited=0 b0 t0 b1 t1 pct
    while :; do
        read -r b0 t0 < <(machine_jiffies)
        sleep 1
        read -r b1 t1 < <(machine_jiffies)
        pct=$(((b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1)))
        if ((pct < QUIET_MAX || waited >= QUIET_WAIT)); then
            echo "$waited $pct"
            return
        fi
        sleep 2
        waited=$((waited + 3))
    done
}

# One measurement: kind (hookinbox|baseline), mode (open|sat), round, concurrency.
measure() {
    local kind=$1 mode=$2 round=$3 conc=${4:-}
    local name="${mode}${conc:+-c$conc}-r$round-$kind"
    local dir="$WORK/$name"
    mkdir -p "$dir"
    write_config "$dir"
    start_server "$kind" "$dir" "$OUT/logs/$name.log"
    local load=(--url "$SERVER_URL/hooks/bench" --json "$OUT/runs/$name.loadgen.json"
        --run-id "$STAMP-$RUN_SEQ")
    RUN_SEQ=$((RUN_SEQ + 1))
    local limit
    if [[ $mode == open ]]; then
        load+=(--rate "$RATE" --duration "$DURATION" --warmup "$WARMUP")
        limit=$((DURATION + WARMUP + 60))
    else
        load+=(--saturate --concurrency "$conc" --duration "$SAT_DURATION" --warmup "$SAT_WARMUP")
        limit=$((SAT_DURATION + SAT_WARMUP + 60))
    fi
    local load_before wall_start wall_end quiet busy0 busy1 total0 total1
    quiet=$(wait_for_quiet)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    read -r busy0 total0 < <(machine_jiffies)
    wall_start=$(date +%s.%N)
    if ! timeout "$limit" "$BIN/loadgen" "${load[@]}" >"$OUT/logs/$name.loadgen.txt" 2>&1; then
        echo "loadgen failed for $name; see $OUT/logs/$name.loadgen.txt" >&2
        exit 1
    fi
    wall_end=$(date +%s.%N)
    read -r busy1 total1 < <(machine_jiffies)
    local threads
    threads=$(thread_cpu_json "$SERVER_PID")
    stop_server
    local rows=null
    if [[ $kind == hookinbox ]]; then
        rows=$("$BIN/hookinbox" stats --json --config "$dir/bench.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
    fi
    python3 - "$OUT/runs/$name.meta.json" "$name" "$kind" "$mode" "$round" "$conc" "$rows" \
        "$threads" "$wall_start" "$wall_end" "$load_before" "$quiet" "$((busy1 - busy0))" <<'PY'
import json, os, sys
path, name, kind, mode, rnd, conc, rows, threads, start, end, load, quiet, busy = sys.argv[1:]
waited, quiet_pct = quiet.split()
json.dump({
    "name": name, "kind": kind, "mode": mode, "round": int(rnd),
    "concurrency": int(conc) if conc else None,
    "db_rows": None if rows == "null" else int(rows),
    "server_threads": json.loads(threads),
    "wall_s": round(float(end) - float(start), 2),
    "loadavg_before": float(load),
    "quiet_waited_s": int(waited), "busy_percent_before": int(quiet_pct),
    # CPU seconds of the whole machine (all processes) during the measurement.
    "machine_cpu_s": int(busy) / os.sysconf("SC_CLK_TCK"),
}, open(path, "w"), indent=1)
PY
    python3 "$BENCH/summarize.py" --check "$OUT/runs/$name" || exit 1
    ((KEEP_DB)) || rm -rf "$dir"/inbox.db*
}

{
    echo "command: bench/run.sh --rounds $ROUNDS --rate $RATE --duration $DURATION --warmup $WARMUP --sat-duration $SAT_DURATION --sat-warmup $SAT_WARMUP --concurrency \"$CONCURRENCY\""
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!bench/out' || echo ' (dirty)')"
    echo "rustc: $(rustc --version)"
} >"$OUT/facts.txt"
cat "$OUT/facts.txt" >&2

for round in $(seq "$ROUNDS"); do
    # Alternate which target goes first, so neither always runs on a warmer
    # (or busier) machine.
    if ((round % 2)); then order="hookinbox baseline"; else order="baseline hookinbox"; fi
    for kind in $order; do
        echo "== round $round/$ROUNDS: $kind, open loop at $RATE req/s" >&2
        measure "$kind" open "$round"
    done
    for conc in $CONCURRENCY; do
        for kind in $order; do
            echo "== round $round/$ROUNDS: $kind, saturate, concurrency $conc" >&2
            measure "$kind" sat "$round" "$conc"
        done
    done
done

python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.md"
echo "raw results: $OUT" >&2
