#!/usr/bin/env bash
# bench/commit_io.sh — what one group commit costs, and where the ack tail
# is spent, A/B between builds and placements.
#
# Runs the default configuration (SQLite, sealed, info logs; the config
# bench/run.sh writes, plus an admin listener) of each build given, at an
# open-loop --rate, alternating the builds round by round, and reports per
# run: ack latency (loadgen), the server's own time to answer (the `ack_ms`
# of its per-event log line, from the request's arrival in the handler to
# its answer), the load generator's send lag, server CPU, the commit histogram
# (`hookinbox_commit_duration_seconds`), the disk's write requests per commit
# (/sys/block/<dev>/stat), the sqlite-writer thread's CPU and run-queue wait
# per event (/proc/<pid>/task/<tid>/schedstat), and the CPU of the rest of
# the machine and its steal time, so noisy rounds show. Made for issue 20's
# WAL change (bench/RESULTS.md §15); any two builds of `hookinbox` compare.
#
# Usage: bench/commit_io.sh [--rounds N] [--rate R | --concurrency C] [--duration S]
#                           [--device vda] NAME=DIR[,OPTION...] [NAME=DIR[,OPTION...] ...]
#   --concurrency C runs the load generator's closed loop (`--saturate`) with C
#   connections instead of the open loop: the acks/s column is then the
#   saturation throughput, and the send lag is empty.
#   DIR holds a release `hookinbox`, `baseline` and `loadgen` (e.g.
#   target/release copied aside before rebuilding). OPTIONs:
#     server=baseline    run the no-storage baseline instead of hookinbox
#                        (the commit and writer columns are then empty)
#     server_cpus=LIST   pin the server to these CPUs (taskset -c LIST)
#     loadgen_cpus=LIST  pin the load generator to these CPUs
#     checkpointer_idle  put the sqlite-checkpt thread in the idle I/O class
#                        (ionice -c 3; the disk's scheduler must honour it)
#     commit_interval=D  storage.commit_interval (e.g. 4ms; default: the server's)
#     plaintext          encryption at rest off (`allow_plaintext`): the ablation
#                        that prices sealing
#   e.g. shared=target/release pinned=target/release,server_cpus=0,loadgen_cpus=1
#   Raw files go to bench/out/commit_io-<stamp>/, or under --out DIR (e.g. a
#   tmpfs, to take the disk out of the measurement: an ablation). Each run's
#   database and payload segments are deleted after it.
set -euo pipefail
# bench_config
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

ROUNDS=3
RATE=2000
CONCURRENCY=""
DURATION=20
WARMUP=5
DEVICE=vda
BUILDS=()
while (($#)); do
    case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --concurrency) CONCURRENCY=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --out) OUT_BASE=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *=*) BUILDS+=("$1"); shift ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done
((${#BUILDS[@]})) || { echo "give at least one NAME=DIR" >&2; exit 2; }
[[ -r /sys/block/$DEVICE/stat ]] || { echo "no /sys/block/$DEVICE/stat (--device)" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="${OUT_BASE:-$ROOT/bench/out}/commit_io-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
ADMIN_PORT=$((20000 + RANDOM % 20000))

thread_stats() { # pid -> "name cpu_ns runq_ns slices" per thread
    local t
    for t in /proc/"$1"/task/*; do echo "$(cat "$t/comm") $(cat "$t/schedstat")"; done
}

# pinned CPUS: the command prefix that pins to CPUS, none if empty.
pinned() { [[ -n "$1" ]] && echo taskset -c "$1"; true; }

measure() { # name spec round
    local name=$1 spec=$2 round=$3
    local bin server=hookinbox server_cpus="" loadgen_cpus="" checkpointer_idle="" option
    local sealing=sealed
    local storage_extra=""
    local -a options
    IFS=, read -r -a options <<<"$spec"
    bin=$(cd "${options[0]}" && pwd)
    for option in "${options[@]:1}"; do
        case "$option" in
        server=hookinbox | server=baseline) server=${option#server=} ;;
        server_cpus=*) server_cpus=${option#*=} ;;
        loadgen_cpus=*) loadgen_cpus=${option#*=} ;;
        checkpointer_idle) checkpointer_idle=1 ;;
        commit_interval=*) storage_extra="commit_interval = \"${option#*=}\"" ;;
        plaintext) sealing=plaintext ;;
        *) echo "unknown option $option in $name=$spec (see --help)" >&2; exit 2 ;;
        esac
    done
    local command=("$bin/hookinbox" serve)
    [[ $server == baseline ]] && command=("$bin/baseline")
    local dir="$OUT/$name-r$round"
    mkdir -p "$dir"
    local secret
    secret="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')"
    bench_config "$dir/bench.toml" standard "$secret" "$sealing" "
[admin]
listen = \"127.0.0.1:$ADMIN_PORT\""
    # Into [storage], which bench_config wrote (a table is written once in TOML).
    [[ -n $storage_extra ]] && sed -i "/^queue_capacity = /a $storage_extra" "$dir/bench.toml"
    # shellcheck disable=SC2046 # pinned's words are the prefix
    (cd "$dir" && exec $(pinned "$server_cpus") "${command[@]}" --config "$dir/bench.toml" \
        >"$dir/stdout" 2>"$dir/log") &
    local pid=$! url=""
    for _ in $(seq 100); do
        url=$(grep -m1 -o 'listening on http://[0-9.:]*' "$dir/stdout" 2>/dev/null || true)
        [[ -n "$url" ]] && break
        sleep 0.1
    done
    [[ -n "$url" ]] || { echo "$name did not start; see $dir/log" >&2; kill "$pid"; exit 1; }
    url=${url#listening on }
    if [[ -n $checkpointer_idle ]]; then
        local task
        for task in /proc/"$pid"/task/*; do
            [[ $(cat "$task/comm") == sqlite-checkpt ]] && ionice -c 3 -p "${task##*/}"
        done
    fi
    head -1 /proc/stat >"$dir/stat0"; cat "/sys/block/$DEVICE/stat" >"$dir/blk0"
    thread_stats "$pid" >"$dir/threads0"; cut -d' ' -f14,15 "/proc/$pid/stat" >"$dir/cpu0"
    local load=(--rate "$RATE")
    [[ -n $CONCURRENCY ]] && load=(--saturate --concurrency "$CONCURRENCY")
    # shellcheck disable=SC2046
    LOADGEN_SECRET=$secret timeout $((DURATION + WARMUP + 60)) $(pinned "$loadgen_cpus") \
        "$bin/loadgen" --url "$url/hooks/bench" \
        --scheme standard "${load[@]}" --duration "$DURATION" --warmup "$WARMUP" \
        --json "$dir/loadgen.json" >"$dir/loadgen.txt" 2>&1
    head -1 /proc/stat >"$dir/stat1"; cat "/sys/block/$DEVICE/stat" >"$dir/blk1"
    thread_stats "$pid" >"$dir/threads1"; cut -d' ' -f14,15 "/proc/$pid/stat" >"$dir/cpu1"
    curl -sf "127.0.0.1:$ADMIN_PORT/metrics" >"$dir/metrics.txt" || : >"$dir/metrics.txt"
    kill -TERM "$pid"; wait "$pid" || true
    rm -rf "$dir"/inbox.db*
    python3 - "$dir" "$name" "$round" <<'PY' | tee -a "$OUT/runs.jsonl"
import json, os, re, sys
d, name, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3])
hz = os.sysconf("SC_CLK_TCK")
lg = json.load(open(f"{d}/loadgen.json"))
lat = lg["latency_us"]
def nums(f): return list(map(int, open(f).read().split()))
cpu = (sum(nums(f"{d}/cpu1")) - sum(nums(f"{d}/cpu0"))) / hz
s0, s1 = [list(map(int, open(f"{d}/stat{i}").read().split()[1:])) for i in (0, 1)]
elapsed = (sum(s1) - sum(s0)) / hz / os.cpu_count()
busy = lambda s: sum(s[:8]) - s[3] - s[4] - s[7]  # not idle, iowait or steal
b0, b1 = nums(f"{d}/blk0"), nums(f"{d}/blk1")
metric = {}
for line in open(f"{d}/metrics.txt"):
    m = re.match(r'(hookinbox_commit_duration_seconds_(?:sum|count)|hookinbox_ack_duration_seconds_count)\S* (\S+)', line)
    if m: metric[m.group(1)] = metric.get(m.group(1), 0) + float(m.group(2))
def writer(f):
    for line in open(f):
        p = line.split()
        if p[0] == "sqlite-writer": return int(p[1]), int(p[2])
w0, w1 = writer(f"{d}/threads0"), writer(f"{d}/threads1")
commits = metric.get("hookinbox_commit_duration_seconds_count")
events = metric.get("hookinbox_ack_duration_seconds_count")
def per(value, count, digits):  # None where the server has no such part (baseline)
    return round(value / count, digits) if value is not None and count else None
# The server's own time to answer: `ack_ms` of the per-event log line, over
# the last `ok` accepted events (the measured window; the warmup's come first).
acks = [float(m.group(1)) for line in open(f"{d}/log")
        for m in [re.search(r"ack_ms=([0-9.]+)", line)] if m]
acks = sorted(acks[-lg["ok"]:])
def pct(sorted_values, q):
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] if sorted_values else None
lag = lg.get("send_lag_us") or {}
row = {
    "build": name, "round": rnd,
    "acks_per_s": round(lg["ack_rate"]),
    "p50_ms": lat["p50"] / 1000, "p99_ms": lat["p99"] / 1000, "p99_9_ms": lat["p99_9"] / 1000,
    "server_p50_ms": pct(acks, 0.50), "server_p99_ms": pct(acks, 0.99),
    "send_lag_p99_ms": lag["p99"] / 1000 if lag else None,
    "server_cpu_pct": round(100 * cpu / elapsed, 1),
    "commit_mean_ms": per(1000 * metric["hookinbox_commit_duration_seconds_sum"] if commits else None, commits, 3),
    "events_per_commit": per(events, commits, 2),
    "disk_writes_per_commit": per(b1[4] - b0[4], commits, 2),
    "writer_cpu_us_per_event": per((w1[0] - w0[0]) / 1e3 if w1 else None, events, 1),
    "writer_runq_us_per_event": per((w1[1] - w0[1]) / 1e3 if w1 else None, events, 1),
    # percent of one core, as server_cpu_pct
    "others_pct": round(100 * (busy(s1) - busy(s0)) / hz / elapsed - 100 * cpu / elapsed - lg["generator_cpu_percent"]),
    "steal_pct": round(100 * (s1[7] - s0[7]) / hz / elapsed),
    "non_2xx": sum(lg["non_2xx"].values()) + sum(lg["errors"].values()),
}
print(json.dumps(row))
PY
}

for round in $(seq "$ROUNDS"); do
    # Alternate the order, so that a drift in the machine falls on all alike.
    order=("${BUILDS[@]}")
    ((round % 2 == 0)) && order=($(printf '%s\n' "${BUILDS[@]}" | tac))
    for build in "${order[@]}"; do
        measure "${build%%=*}" "${build#*=}" "$round"
    done
done
python3 - "$OUT/runs.jsonl" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cols = ["acks_per_s", "p50_ms", "p99_ms", "server_p99_ms", "send_lag_p99_ms", "server_cpu_pct", "commit_mean_ms", "events_per_commit",
        "disk_writes_per_commit", "writer_cpu_us_per_event", "others_pct", "steal_pct"]
print("| build | " + " | ".join(c + " (rounds; median)" for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
for build in dict.fromkeys(r["build"] for r in rows):
    mine = [r for r in rows if r["build"] == build]
    def cell(c):
        values = [r[c] for r in mine if r[c] is not None]
        if not values:
            return "–"
        return ", ".join(f"{v:g}" for v in values) + f"; **{statistics.median(values):g}**"
    cells = [cell(c) for c in cols]
    print(f"| {build} | " + " | ".join(cells) + " |")
PY
echo "raw runs: $OUT" >&2
