#!/usr/bin/env bash
# bench/purge.sh — ingress latency while `serve` purges a large backlog (issue 9).
#
# The target: the ingress p99 at --rate req/s (default 2,000) while a purge of
# --rows (default 1,000,000) old rows runs stays within 1.5x of the p99 without
# the purge.
#
# Once: `preload` (bench/src/bin/preload.rs) writes --rows events received 3
# days ago straight into an SQLite store (no HTTP), as the template database.
# Then, for each round, in an order that alternates between rounds:
#
#   purge     `hookinbox serve` on a copy of the template with [retention]
#             dedup = "1d", raw_payload = "1h", batch = --batch: its purge task
#             starts at start-up and deletes the old rows whole, batch after
#             batch, while loadgen sends --rate req/s for --warmup + --duration s;
#   no-purge  the same, on a copy of the same template, without [retention]:
#             the same database, nothing purged;
#   baseline  bench's no-storage baseline (`baseline`) at the same rate.
#
# For the purge runs the old rows still due are counted (`hookinbox purge
# --dry-run`) before loadgen starts and after it ends: the rows purged inside
# the measurement, and a check that the purge was still running at its end
# (otherwise the window was not all "during the purge", and the run says so).
# Every 2xx must have its row (rows = new events acknowledged + old rows left,
# plus at most the requests answered 503 or not at all, which may have committed).
#
# The machine is shared: before each measurement the script waits (at most
# --quiet-wait s) for a second with under --quiet-max % of the CPUs busy, and it
# records the CPU other processes used during the measurement ("others' CPU",
# % of one core), as bench/run.sh does.
#
# Raw results go to bench/out/purge-<UTC timestamp>/ (gitignored), the summary
# to summary.md there and on stdout. Everything runs on 127.0.0.1 and stops by
# itself. Disk: the template and one copy at a time (about 0.7 GB for 1,000,000
# rows of 256 B bodies).
#
# Usage: bench/purge.sh [--rounds N] [--rows N] [--rate R] [--duration S]
#                       [--warmup S] [--batch N] [--body-bytes N]
#                       [--quiet-wait S] [--quiet-max PCT] [--no-build]
#                       [--template DIR]
#
# --template DIR keeps the preloaded database in DIR (made there if DIR has
# no inbox.db, reused as it is if it has), to rerun without preloading again.
set -euo pipefail

ROUNDS=3
ROWS=1000000
RATE=2000
DURATION=20
WARMUP=5
BATCH=1000
BODY_BYTES=256
QUIET_WAIT=120
QUIET_MAX=25
BUILD=1
TEMPLATE=""

ARGS="$*"
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

while (($#)); do
    case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --body-bytes) BODY_BYTES=$2; shift 2 ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --quiet-max) QUIET_MAX=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --template) TEMPLATE=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/release"
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 2; }
if ((BUILD)); then
    echo "== building release binaries" >&2
    (cd "$ROOT" && cargo build --release -p hookinbox -p hookinbox-bench)
fi
for b in hookinbox baseline loadgen preload; do
    [[ -x "$BIN/$b" ]] || { echo "missing $BIN/$b (run without --no-build)" >&2; exit 2; }
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/bench/out/purge-$STAMP"
mkdir -p "$OUT/runs" "$OUT/logs"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookinbox-purge-bench.XXXXXX")
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOADGEN_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export LOADGEN_SECRET

# Config for one measurement in directory $1; $2 = 1 adds the retention rules.
# Without encryption at rest, as every section of RESULTS.md before issue 20.
write_config() {
    local retention=""
    [[ "$2" == 1 ]] && retention="
[retention]
raw_payload = \"1h\"
dedup = \"1d\"
batch = $BATCH
# The first purge runs at start-up; no second one during the measurement.
purge_interval = \"1h\""
    bench_config "$1/bench.toml" lab "$LOADGEN_SECRET" plaintext "$retention"
}

# bench_config
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

# machine_jiffies, wait_for_quiet
# shellcheck source=quiet.sh
source "$(dirname "$0")/quiet.sh"

# CPU jiffies (user + system, all threads) of process $1.
process_jiffies() {
    awk '{print $14 + $15}' "/proc/$1/stat"
}

# Starts binary $1 with config dir $2; sets SERVER_PID and SERVER_URL.
start_server() {
    local bin=$1 dir=$2 log=$3 command=()
    [[ $bin == hookinbox ]] && command=(serve)
    "$BIN/$bin" "${command[@]}" --config "$dir/bench.toml" --listen 127.0.0.1:0 \
        >"$dir/stdout" 2>"$log" &
    SERVER_PID=$!
    local line=""
    for _ in $(seq 300); do
        line=$(grep -m1 -o 'listening on http://[0-9.:]*' "$dir/stdout" 2>/dev/null || true)
        [[ -n "$line" ]] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n "$line" ]] || { echo "$bin did not start; see $log" >&2; exit 1; }
    SERVER_URL="${line#listening on }"
}

stop_server() {
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 300); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# Old rows still due in directory $1 (`purge --dry-run`'s events count).
old_rows_due() {
    "$BIN/hookinbox" purge --dry-run --config "$1/bench.toml" | awk '$1 == "events" {print $2}'
}

[[ -n "$TEMPLATE" ]] || TEMPLATE="$WORK/template"
mkdir -p "$TEMPLATE"
if [[ -e "$TEMPLATE/inbox.db" ]]; then
    echo "== reusing the preloaded database in $TEMPLATE" >&2
else
    echo "== preloading $ROWS old events ($BODY_BYTES B bodies)" >&2
    "$BIN/preload" --db "$TEMPLATE/inbox.db" --events "$ROWS" --body-bytes "$BODY_BYTES" \
        2>&1 | tee "$OUT/logs/preload.txt" >&2
fi
du -sh "$TEMPLATE" | tee -a "$OUT/logs/preload.txt" >&2

# One measurement: kind (purge|no-purge|baseline), round.
measure() {
    local kind=$1 round=$2 name="$1-r$2"
    local dir="$WORK/$name"
    if [[ $kind == baseline ]]; then
        mkdir -p "$dir"
    else
        cp -r "$TEMPLATE" "$dir"
    fi
    write_config "$dir" "$([[ $kind == purge ]] && echo 1 || echo 0)"
    local quiet due_before=null due_after=null
    quiet=$(wait_for_quiet)
    local bin=hookinbox
    [[ $kind == baseline ]] && bin=baseline
    start_server "$bin" "$dir" "$OUT/logs/$name.log"
    [[ $kind == purge ]] && due_before=$(old_rows_due "$dir")
    local busy0 total0 busy1 total1 srv0 srv1 start end
    read -r busy0 total0 < <(machine_jiffies)
    srv0=$(process_jiffies "$SERVER_PID")
    start=$(date +%s.%N)
    timeout $((WARMUP + DURATION + 60)) "$BIN/loadgen" --url "$SERVER_URL/hooks/bench" \
        --rate "$RATE" --duration "$DURATION" --warmup "$WARMUP" --run-id "p$STAMP-$name" \
        --json "$OUT/runs/$name.loadgen.json" >"$OUT/logs/$name.loadgen.txt" 2>&1 ||
        { echo "loadgen failed for $name; see $OUT/logs/" >&2; exit 1; }
    end=$(date +%s.%N)
    read -r busy1 total1 < <(machine_jiffies)
    srv1=$(process_jiffies "$SERVER_PID")
    [[ $kind == purge ]] && due_after=$(old_rows_due "$dir")
    local purge_logged=0
    grep -q "Purged under the retention rules." "$OUT/logs/$name.log" && purge_logged=1
    stop_server
    # The purge went on until the server stopped: the old rows left now.
    local due_at_stop=null
    [[ $kind == purge ]] && due_at_stop=$(old_rows_due "$dir")
    local rows=null
    if [[ $kind != baseline ]]; then
        rows=$("$BIN/hookinbox" stats --json --config "$dir/bench.toml" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
    fi
    rm -rf "$dir"
    python3 - "$OUT/runs/$name.meta.json" "$OUT/runs/$name.loadgen.json" "$kind" "$round" \
        "$rows" "$due_before" "$due_after" "$due_at_stop" "$purge_logged" "$start" "$end" "$quiet" \
        "$((busy1 - busy0))" "$((srv1 - srv0))" "$ROWS" <<'PY'
import json, os, sys
(path, report_path, kind, rnd, rows, before, after, at_stop, logged, start, end, quiet,
 busy, server, preloaded) = sys.argv[1:]
hz = os.sysconf("SC_CLK_TCK")
report = json.load(open(report_path))
wall = float(end) - float(start)
server_s = int(server) / hz
other = int(busy) / hz - server_s - (report.get("generator_cpu_s") or 0.0)
acked = report["ok"] + report.get("warmup_ok", 0)
meta = {
    "kind": kind, "round": int(rnd), "wall_s": round(wall, 2),
    "quiet_waited_s": int(quiet.split()[0]), "busy_percent_before": int(quiet.split()[1]),
    "server_cpu_percent": round(100 * server_s / wall, 1),
    "others_cpu_percent": round(max(0.0, 100 * other / wall), 1),
    "p50_ms": report["latency_us"]["p50"] / 1e3, "p99_ms": report["latency_us"]["p99"] / 1e3,
    "p99_9_ms": report["latency_us"]["p99_9"] / 1e3, "max_ms": report["latency_us"]["max"] / 1e3,
    "ok": report["ok"], "non_2xx": report["non_2xx"], "errors": report["errors"],
}
if kind != "baseline":
    left = int(at_stop) if kind == "purge" else int(preloaded)
    meta["rows"] = int(rows)
    # Every 2xx has its row; a 503 (outcome unknown) or an unanswered
    # request may have committed too, as in bench/run.sh.
    unanswered = sum(report["non_2xx"].values()) + sum(report["errors"].values())
    meta["durable"] = 0 <= int(rows) - (acked + left) <= unanswered
if kind == "purge":
    meta["old_due_before"] = int(before)
    meta["old_due_after"] = int(after)
    meta["purged_in_window"] = int(before) - int(after)
    meta["purged_per_s"] = round((int(before) - int(after)) / wall)
    # Still running at the end: rows still due and no completion logged.
    meta["purge_covered_window"] = int(after) > 0 and logged == "0"
json.dump(meta, open(path, "w"), indent=1)
print(f"   {kind} r{rnd}: p50 {meta['p50_ms']:.2f} p99 {meta['p99_ms']:.2f} "
      f"p99.9 {meta['p99_9_ms']:.2f} ms, ok {meta['ok']}, non-2xx {meta['non_2xx']}, "
      f"server {meta['server_cpu_percent']:.0f} %, others {meta['others_cpu_percent']:.0f} %"
      + (f", purged {meta['purged_in_window']} in the window ({meta['purged_per_s']}/s), "
         f"still running at the end: {meta['purge_covered_window']}" if kind == "purge" else "")
      + (f", durable: {meta['durable']}" if kind != "baseline" else ""), file=sys.stderr)
if kind != "baseline" and not meta["durable"]:
    sys.exit(f"{kind} r{rnd}: rows {rows} do not match the acknowledged events")
PY
}

for round in $(seq "$ROUNDS"); do
    echo "== round $round" >&2
    if ((round % 2)); then order=(purge no-purge baseline); else order=(no-purge baseline purge); fi
    for kind in "${order[@]}"; do
        measure "$kind" "$round"
    done
done

python3 - "$OUT" "$RATE" "$ROWS" "$BATCH" "$BODY_BYTES" "$ARGS" <<'PY' | tee "$OUT/summary.md"
import glob, json, statistics, sys
out, rate, rows, batch, body, args = sys.argv[1:]
runs = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/runs/*.meta.json"))]
by = {k: sorted([r for r in runs if r["kind"] == k], key=lambda r: r["round"])
      for k in ("purge", "no-purge", "baseline")}
med = lambda k, f: statistics.median(r[f] for r in by[k])
print(f"Open loop at {rate} req/s; {rows} old rows purged by `serve` in batches of {batch} "
      f"({body} B bodies, SQLite, no encryption).\n")
print("| run | round | p50 | p99 | p99.9 | max | non-2xx | server CPU | others' CPU | purged in window | purge running at end |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for k in ("purge", "no-purge", "baseline"):
    for r in by[k]:
        extra = (f"{r['purged_in_window']:,} ({r['purged_per_s']:,}/s) | {'yes' if r['purge_covered_window'] else 'NO'}"
                 if k == "purge" else "- | -")
        print(f"| {k} | {r['round']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['p99_9_ms']:.2f} | "
              f"{r['max_ms']:.2f} | {sum(r['non_2xx'].values()) + sum(r['errors'].values())} | "
              f"{r['server_cpu_percent']:.0f} % | {r['others_cpu_percent']:.0f} % | {extra} |")
print("\n| median over rounds | p50 | p99 | p99.9 | others' CPU |")
print("|---|---|---|---|---|")
for k in ("purge", "no-purge", "baseline"):
    print(f"| {k} | {med(k, 'p50_ms'):.2f} | {med(k, 'p99_ms'):.2f} | {med(k, 'p99_9_ms'):.2f} | "
          f"{med(k, 'others_cpu_percent'):.0f} % |")
ratio = med("purge", "p99_ms") / med("no-purge", "p99_ms")
pairs = [p["p99_ms"] / n["p99_ms"] for p, n in zip(by["purge"], by["no-purge"])]
print(f"\np99 with the purge / without (medians): **{ratio:.2f}x** (target <= 1.5x); "
      f"per round: {', '.join(f'{x:.2f}x' for x in pairs)}.")
print(f"\nCommand: `bench/purge.sh {args}`".rstrip() + "")
PY
echo "raw results in $OUT" >&2
