#!/usr/bin/env bash
# bench/run.sh — hookinbox as users run it, against its no-storage baseline,
# in one run.
#
# Builds release binaries, then, for each round, runs the SAME load against
# `hookinbox serve` in its default configuration (SQLite, WAL,
# synchronous=FULL, every body and audit header sealed, one INFO line per
# accepted event), against each ablation (--ablations), and against
# `baseline` (the same ingress with a store that keeps nothing), alternating
# the order between rounds so that the machine's noise falls on all alike:
#
#   (a) open loop at --rate req/s (default 2,000) for --duration s after
#       --warmup s: ack latency p50/p99/p99.9/max, server CPU, errors;
#   (b) closed loop (`loadgen --saturate`) at each --concurrency: acks/s.
#
# The rows (kinds):
#   hookinbox  the default configuration: sealed, RUST_LOG unset (info)
#   plaintext  ablation: `[encryption] allow_plaintext = true`, no key
#   warn       ablation: sealed, RUST_LOG=warn (no per-event line)
#   baseline   the no-storage server (bench/src/bin/baseline.rs)
#   targets    ablation (issue 21): the default plus three http targets,
#              ingress only (`serve --no-workers`): one delivery row each
#   filtered   ablation (issue 21): `targets` with a 3-clause CEL filter on
#              every target (event type, a body field, a body function),
#              all true, so the rows are the same as `targets`'
#   (`--ablations "targets filtered"` measures the cost of filters in one run)
#   eager      ablation (issue 20): `storage.commit_interval = "0ms"`, every
#              batch committed as soon as the writer takes it, as before
#              the commit interval existed (`--ablations eager`)
#   otlp_down  ablation (issue 22): the default with `[telemetry.otlp]` on,
#              every trace sampled, its collector a closed port: what a
#              collector that is down costs ingress (`--ablations otlp_down`)
# The summary's last table is issue 20's targets, each the median over the
# rounds: p99 at --rate ≤ 2x the same run's baseline in every round, ≥ 20,000
# acks/s at c64 and c256, server CPU at --rate ≤ 35 % of a core, sealing ≤ 5 %
# (hookinbox vs plaintext) and the log line ≤ 3 % (hookinbox vs warn) of
# saturation throughput and of p99. The defaults run that whole table:
#
#   bench/run.sh                       # 3 rounds, Standard Webhooks, ~40 min
#   bench/run.sh --scheme stripe       # the same with Stripe signatures
#
# --scheme picks the signature the requests carry and the endpoint's
# provider: standard (Standard Webhooks, default), stripe, or lab.
#
# Every measurement gets a fresh server process and, for hookinbox, a fresh
# database (and key) in a temporary directory. After each hookinbox
# measurement the server is stopped and its row count is compared with the
# number of 2xx the generator received (warmup included): a 2xx whose row is
# missing fails the run, so "durable acks/s" means acks whose rows are
# really committed.
#
# Raw results (loadgen JSON, per-run server facts, server logs) go to
# bench/out/<UTC timestamp>/ (gitignored); the summary tables are printed and
# written to summary.md and summary.json there. Everything runs on 127.0.0.1
# and stops by itself: every step has a time limit.
#
# Usage: bench/run.sh [--rounds N] [--rate R] [--duration S] [--warmup S]
#                     [--sat-duration S] [--sat-warmup S] [--concurrency "64 256"]
#                     [--scheme standard|stripe|lab] [--ablations "plaintext warn"]
#                     [--quiet-wait S] [--quiet-max PCT] [--no-build] [--keep-db]
#                     [--profile release|profiling]
#                     [--kinds "hookinbox plaintext warn eager targets filtered otlp_down baseline postgres"]
#                     [--postgres URL [--pgbench-clients N] [--pg-deliveries N]
#                      [--pg-load-rate R] [--pg-work-concurrency C]]
#
# --ablations "" measures only the default configuration and the baseline.
# --profile runs the binaries of another cargo profile (target/<profile>/,
# e.g. profiling for a smoke run beside bench/profile.sh); release is what
# users get.
#
# --postgres URL (e.g. postgres://postgres@127.0.0.1:5432/postgres) adds
# PostgreSQL to the same alternating rounds, every measurement in a fresh
# schema of its own (dropped afterwards), sealed like the default:
#   - `postgres`, open loop: TWO `hookinbox serve --no-workers` processes on
#     the same schema, each driven by its own loadgen at --rate/2; the row
#     reports the max of the two loadgens' percentiles (their histograms are
#     not in the JSON, so they cannot be merged) and the sum of their counts;
#   - `postgres`, saturation: one `serve --no-workers` process at each
#     --concurrency;
#   - `pgbench`, once per round beside the saturation runs: the reference of
#     one ~10 KiB row per transaction, `pgbench -f` inserting
#     repeat('x', 10240) into a text column stored uncompressed (STORAGE
#     EXTERNAL, so all 10 KiB reach the WAL as hookinbox's bodies do), at
#     --pgbench-clients (64) clients, -j 2, --sat-warmup then --sat-duration;
#   - delivery drain, once per round (--pg-deliveries events, 0 skips it): the
#     outbox is filled with `serve --no-workers` (loadgen open loop at
#     --pg-load-rate, 1 KiB bodies, as bench/delivery.sh), then TWO
#     `hookinbox work` processes deliver to bench's `sink`; deliveries/s =
#     delivered / (last delivered_at_ms - start of the work processes).
# For PostgreSQL rows, the durability check counts <schema>.inbox with psql,
# and the CPU of all `postgres` processes on the machine during the
# measurement (other users of the same server included) is added to the
# "server CPU" column, so "others' CPU" keeps meaning other work.
#
# --kinds limits the targets measured (default: hookinbox and baseline, plus
# postgres with --postgres), e.g. --kinds postgres for quick PostgreSQL
# iterations; the pgbench reference and the drain still run with --postgres.
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
CONCURRENCY="64 256"
SCHEME=standard
ABLATIONS="plaintext warn"
PROFILE=release
BUILD=1
KEEP_DB=0
QUIET_WAIT=120 # most seconds to wait, before each measurement, for the machine to calm down
QUIET_MAX=25   # "calm": at most this % of all CPUs busy over one second
PG_URL=""              # --postgres: adds the PostgreSQL measurements
PGBENCH_CLIENTS=64     # pgbench reference: clients (-c)
PG_DELIVERIES=20000    # delivery drain: events preloaded (0: no drain)
PG_LOAD_RATE=3000      # delivery drain: open-loop rate of the preload
PG_WORK_CONCURRENCY=64 # delivery drain: the target's concurrency in each work process
ONLY_KINDS=""          # --kinds: measure only these targets

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
    --scheme) SCHEME=$2; shift 2 ;;
    --ablations) ABLATIONS=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --keep-db) KEEP_DB=1; shift ;;
    --quiet-wait) QUIET_WAIT=$2; shift 2 ;;
    --quiet-max) QUIET_MAX=$2; shift 2 ;;
    --postgres) PG_URL=$2; shift 2 ;;
    --pgbench-clients) PGBENCH_CLIENTS=$2; shift 2 ;;
    --pg-deliveries) PG_DELIVERIES=$2; shift 2 ;;
    --pg-load-rate) PG_LOAD_RATE=$2; shift 2 ;;
    --pg-work-concurrency) PG_WORK_CONCURRENCY=$2; shift 2 ;;
    --kinds) ONLY_KINDS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH="$ROOT/bench"
BIN="$ROOT/target/$PROFILE"
command -v python3 >/dev/null || { echo "python3 is needed for the summary" >&2; exit 2; }

if ((BUILD)); then
    echo "== building release binaries" >&2
    (cd "$ROOT" && cargo build --profile "$PROFILE" -p hookinbox -p hookinbox-bench)
fi
NEEDED="hookinbox baseline loadgen"
[[ -n "$PG_URL" ]] && NEEDED="$NEEDED sink"
for b in $NEEDED; do
    [[ -x "$BIN/$b" ]] || { echo "missing $BIN/$b (run without --no-build)" >&2; exit 2; }
done
if [[ -n "$PG_URL" ]]; then
    for b in psql pgbench; do
        command -v "$b" >/dev/null || { echo "--postgres needs $b" >&2; exit 2; }
    done
    psql "$PG_URL" -qAtc 'SELECT 1' >/dev/null || { echo "cannot connect to $PG_URL" >&2; exit 2; }
fi

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$BENCH/out/$STAMP"
mkdir -p "$OUT/runs" "$OUT/logs" "$OUT/parts"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookinbox-bench.XXXXXX")
SERVER_PID=""
STARTED=()  # every process started here and not yet stopped
SCHEMAS=()  # PostgreSQL schemas created here and not yet dropped
RUN_SEQ=1 # makes every event id of the run unique (`--run-id` allows 32 characters)

cleanup() {
    local pid schema
    for pid in "${STARTED[@]:-}"; do
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    for schema in "${SCHEMAS[@]:-}"; do
        [[ -n "$schema" ]] && drop_schema "$schema"
    done
    ((KEEP_DB)) || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A fresh secret per run, in the form --scheme's provider takes, passed to
# loadgen through its environment (not argv).
random_hex() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
case "$SCHEME" in
standard) PROVIDER=standard; LOADGEN_SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')" ;;
stripe) PROVIDER=stripe; LOADGEN_SECRET="whsec_$(random_hex)" ;;
lab) PROVIDER=lab; LOADGEN_SECRET=$(random_hex) ;;
*) echo "--scheme: standard, stripe or lab" >&2; exit 2 ;;
esac
export LOADGEN_SECRET

# Writes a config for one measurement into directory $1 (the DB and the key
# live beside it). With $2 = a PostgreSQL schema, the storage is that schema
# of $PG_URL; with $3 = a sink address, the endpoint delivers there (the
# delivery drain); with $4 = plaintext, nothing is sealed (the ablation);
# with $5 = targets or filtered, the endpoint has three http targets, with
# a filter each for `filtered` (issue 21's ablations); with $5 = otlp_down,
# traces are exported to a collector that is not there (issue 22's ablation).
write_config() {
    local storage='url = "sqlite://inbox.db"'
    local encryption='# The default: every body and audit header sealed, under a key made at start.
[[encryption.key]]
id = "bench-1"
value_file = "bench.key"
create_if_missing = true'
    [[ "${4:-}" == plaintext ]] && encryption='# Ablation: encryption at rest off.
allow_plaintext = true'
    [[ -n "${2:-}" ]] && storage="url = \"$PG_URL\"
schema = \"$2\""
    cat >"$1/bench.toml" <<EOF
# Written by bench/run.sh for one measurement.
[server]
listen = "127.0.0.1:0"

[storage]
$storage
# Deep enough that the open loop never sees 503 Overloaded from a full queue,
# and that saturation measures the writer, not the queue bound.
queue_capacity = 16384

[encryption]
$encryption

[[endpoint]]
id = "bench"
provider = "$PROVIDER"

[[endpoint.secret]]
version = "bench-1"
value = "$LOADGEN_SECRET"
EOF
    if [[ -n "${3:-}" ]]; then
        cat >>"$1/bench.toml" <<EOF

[[endpoint.target]]
name = "sink"
kind = "http"
url = "http://$3/deliveries"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
timeout = "5s"
concurrency = $PG_WORK_CONCURRENCY

[delivery]
poll_interval = "250ms"
EOF
    fi
    if [[ "${5:-}" == eager ]]; then
        # No wait for more events before a commit.
        sed -i 's/^queue_capacity = 16384$/&\ncommit_interval = "0ms"/' "$1/bench.toml"
    fi
    if [[ "${5:-}" == otlp_down ]]; then
        # Port 9 (discard) on 127.0.0.1: nothing listens, every export fails.
        cat >>"$1/bench.toml" <<EOF

[telemetry.otlp]
endpoint = "http://127.0.0.1:9"
sample_ratio = 1.0
EOF
    fi
    if [[ "${5:-}" == targets || "${5:-}" == filtered ]]; then
        local filter="" name
        # Three clauses, as a user writes them: the event's type, a body
        # field, a function over a body field. loadgen's bodies are
        # {"id":"bench-…","type":"bench","pad":"…"}; every event matches.
        [[ "$5" == filtered ]] && filter="filter = \"event.type == 'bench' && body.id.startsWith('bench-') && size(body.pad) >= 0\""
        for name in billing fraud erp; do
            cat >>"$1/bench.toml" <<EOF

[[endpoint.target]]
name = "$name"
kind = "http"
url = "http://127.0.0.1:9/$name"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
$filter
EOF
        done
    fi
}

# psql on $PG_URL, quiet, unaligned, stops at the first error.
pg() { psql "$PG_URL" -qAtX -v ON_ERROR_STOP=1 "$@"; }

# A fresh schema name (lowercase, at most 40 characters) in NEW_SCHEMA,
# remembered for cleanup.
new_schema() {
    NEW_SCHEMA="hib_$(echo "$STAMP" | tr 'A-Z' 'a-z')_$1_$RUN_SEQ"
    SCHEMAS+=("$NEW_SCHEMA")
}

drop_schema() {
    ((KEEP_DB)) && return 0
    pg -c "DROP SCHEMA IF EXISTS $1 CASCADE" >/dev/null 2>&1 || echo "could not drop schema $1" >&2
    local kept=() s
    for s in "${SCHEMAS[@]}"; do [[ "$s" == "$1" ]] || kept+=("$s"); done
    SCHEMAS=("${kept[@]:-}")
}

# CPU seconds of every `postgres` process, as JSON {pid: cpu_s}, including
# the CPU of its reaped children (cutime + cstime): the postmaster's children
# are the backends, so a backend that exits between two snapshots (pgbench's
# connections do, at the end of the run) is still counted.
pg_cpu_snapshot() {
    python3 - <<'PY'
import json, os
hz = os.sysconf("SC_CLK_TCK")
out = {}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        continue
    if stat[stat.index("(") + 1 : stat.rindex(")")] != "postgres":
        continue
    fields = stat[stat.rindex(")") + 2 :].split()
    out[pid] = sum(int(f) for f in fields[11:15]) / hz
print(json.dumps(out))
PY
}

# CPU seconds the postgres processes used between snapshots $1 and $2 (JSON
# strings); a process that exited counts through its parent's cutime/cstime.
pg_cpu_delta() {
    python3 -c 'import json,sys; a,b=json.loads(sys.argv[1]),json.loads(sys.argv[2]); print(round(sum(v-a.get(p,0.0) for p,v in b.items()),2))' "$1" "$2"
}

# Starts binary $1 (hookinbox|plaintext|warn|baseline|postgres) with config
# dir $2, stderr to $3, stdout to $dir/stdout$4; sets SERVER_PID and
# SERVER_URL. `postgres` is hookinbox on the config's PostgreSQL schema,
# ingress only; `warn` is hookinbox with RUST_LOG=warn.
start_server() {
    local kind=$1 dir=$2 log=$3 suffix=${4:-}
    local args=(--config "$dir/bench.toml" --listen 127.0.0.1:0)
    local stdout="$dir/stdout$suffix"
    if [[ $kind == hookinbox || $kind == plaintext || $kind == otlp_down || $kind == eager ]]; then
        "$BIN/hookinbox" serve "${args[@]}" >"$stdout" 2>"$log" &
    elif [[ $kind == targets || $kind == filtered ]]; then
        # Ingress only: the targets' rows are written, nobody sends them.
        "$BIN/hookinbox" serve "${args[@]}" --no-workers >"$stdout" 2>"$log" &
    elif [[ $kind == warn ]]; then
        RUST_LOG=warn "$BIN/hookinbox" serve "${args[@]}" >"$stdout" 2>"$log" &
    elif [[ $kind == postgres ]]; then
        "$BIN/hookinbox" serve "${args[@]}" --no-workers >"$stdout" 2>"$log" &
    else
        "$BIN/baseline" "${args[@]}" >"$stdout" 2>"$log" &
    fi
    SERVER_PID=$!
    STARTED+=("$SERVER_PID")
    local line=""
    for _ in $(seq 100); do
        line=$(grep -m1 -o 'listening on http://[0-9.:]*' "$stdout" 2>/dev/null || true)
        [[ -n "$line" ]] && break
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n "$line" ]] || { echo "$kind did not start; see $log" >&2; exit 1; }
    SERVER_URL="${line#listening on }"
}

# Stops process $1, by default the server (SIGTERM: graceful, the writer
# commits what is queued).
stop_server() {
    local pid=${1:-$SERVER_PID}
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "process $pid did not stop in 30 s; killing it" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    local kept=() p
    for p in "${STARTED[@]}"; do [[ "$p" == "$pid" ]] || kept+=("$p"); done
    STARTED=("${kept[@]:-}")
    [[ "$pid" == "$SERVER_PID" ]] && SERVER_PID=""
    return 0
}

# CPU seconds (user+system) per thread name of processes $@ (summed), as JSON.
thread_cpu_json() {
    python3 - "$@" <<'PY'
import json, os, sys
hz = os.sysconf("SC_CLK_TCK")
threads = {}
for pid in sys.argv[1:]:
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

# machine_jiffies, wait_for_quiet
# shellcheck source=quiet.sh
source "$(dirname "$0")/quiet.sh"

# One measurement: kind (hookinbox|baseline|postgres), mode (open|sat), round, concurrency.
measure() {
    local kind=$1 mode=$2 round=$3 conc=${4:-}
    local name="${mode}${conc:+-c$conc}-r$round-$kind"
    local dir="$WORK/$name"
    mkdir -p "$dir"
    local schema="" servers=1
    if [[ $kind == postgres ]]; then
        new_schema "${mode}${conc}r$round"
        schema=$NEW_SCHEMA
        # Two ingress processes on one schema in the open loop (issue 7's target).
        [[ $mode == open ]] && servers=2
    fi
    local sealing=""
    [[ $kind == plaintext ]] && sealing=plaintext
    local routing=""
    [[ $kind == targets || $kind == filtered || $kind == otlp_down || $kind == eager ]] && routing=$kind
    write_config "$dir" "$schema" "" "$sealing" "$routing"
    local pids=() urls=() i tag
    for i in $(seq "$servers"); do
        tag=""; ((servers > 1)) && tag=".$i"
        start_server "$kind" "$dir" "$OUT/logs/$name$tag.log" "$i"
        pids+=("$SERVER_PID")
        urls+=("$SERVER_URL")
    done
    local loads=() limit
    for i in $(seq "$servers"); do
        local json="$OUT/runs/$name.loadgen.json"
        ((servers > 1)) && json="$OUT/parts/$name.$i.loadgen.json"
        local load=(--url "${urls[$((i - 1))]}/hooks/bench" --scheme "$SCHEME" --json "$json" --run-id "$STAMP-$RUN_SEQ")
        RUN_SEQ=$((RUN_SEQ + 1))
        if [[ $mode == open ]]; then
            load+=(--rate "$((RATE / servers))" --duration "$DURATION" --warmup "$WARMUP")
            limit=$((DURATION + WARMUP + 60))
        else
            load+=(--saturate --concurrency "$conc" --duration "$SAT_DURATION" --warmup "$SAT_WARMUP")
            limit=$((SAT_DURATION + SAT_WARMUP + 60))
        fi
        loads+=("${load[*]}")
    done
    local load_before wall_start wall_end quiet busy0 busy1 total0 total1 pg0="{}" pg1="{}"
    quiet=$(wait_for_quiet)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    [[ -n "$schema" ]] && pg0=$(pg_cpu_snapshot)
    read -r busy0 total0 < <(machine_jiffies)
    wall_start=$(date +%s.%N)
    local gens=()
    for i in $(seq "$servers"); do
        # shellcheck disable=SC2086 # the arguments have no spaces
        tag=""; ((servers > 1)) && tag=".$i"
        timeout "$limit" "$BIN/loadgen" ${loads[$((i - 1))]} >"$OUT/logs/$name$tag.loadgen.txt" 2>&1 &
        gens+=($!)
    done
    for i in $(seq "$servers"); do
        if ! wait "${gens[$((i - 1))]}"; then
            echo "loadgen $i failed for $name; see $OUT/logs/" >&2
            exit 1
        fi
    done
    wall_end=$(date +%s.%N)
    read -r busy1 total1 < <(machine_jiffies)
    [[ -n "$schema" ]] && pg1=$(pg_cpu_snapshot)
    local threads
    threads=$(thread_cpu_json "${pids[@]}")
    for i in "${pids[@]}"; do stop_server "$i"; done
    if ((servers > 1)); then
        python3 "$BENCH/summarize.py" --combine "$OUT/runs/$name.loadgen.json" "$OUT/parts/$name".*.loadgen.json
    fi
    local rows=null
    if [[ $kind == hookinbox || $kind == plaintext || $kind == warn || $kind == targets || $kind == filtered || $kind == otlp_down || $kind == eager ]]; then
        rows=$("$BIN/hookinbox" stats --json --config "$dir/bench.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
    elif [[ $kind == postgres ]]; then
        rows=$(pg -c "SELECT count(*) FROM $schema.inbox")
    fi
    local pg_cpu=null
    [[ -n "$schema" ]] && pg_cpu=$(pg_cpu_delta "$pg0" "$pg1")
    python3 - "$OUT/runs/$name.meta.json" "$name" "$kind" "$mode" "$round" "$conc" "$rows" \
        "$threads" "$wall_start" "$wall_end" "$load_before" "$quiet" "$((busy1 - busy0))" "$servers" "$pg_cpu" <<'PY'
import json, os, sys
path, name, kind, mode, rnd, conc, rows, threads, start, end, load, quiet, busy, servers, pg_cpu = sys.argv[1:]
waited, quiet_pct = quiet.split()
json.dump({
    "name": name, "kind": kind, "mode": mode, "round": int(rnd),
    "concurrency": int(conc) if conc else None,
    "db_rows": None if rows == "null" else int(rows),
    "servers": int(servers),
    "server_threads": json.loads(threads),
    "wall_s": round(float(end) - float(start), 2),
    "loadavg_before": float(load),
    "quiet_waited_s": int(waited), "busy_percent_before": int(quiet_pct),
    # CPU seconds of the whole machine (all processes) during the measurement.
    "machine_cpu_s": int(busy) / os.sysconf("SC_CLK_TCK"),
    # CPU seconds of all `postgres` processes (PostgreSQL runs only).
    "postgres_cpu_s": None if pg_cpu == "null" else float(pg_cpu),
}, open(path, "w"), indent=1)
PY
    [[ -n "$schema" ]] && drop_schema "$schema"
    python3 "$BENCH/summarize.py" --check "$OUT/runs/$name" || exit 1
    ((KEEP_DB)) || rm -rf "$dir"/inbox.db*
}

# The pgbench reference of round $1: one ~10 KiB row per transaction at
# PGBENCH_CLIENTS clients, in a fresh schema; writes runs/<name>.pgbench.json.
measure_pgbench() {
    local round=$1 name="sat-c$PGBENCH_CLIENTS-r$1-pgbench"
    local dir="$WORK/$name"
    mkdir -p "$dir"
    new_schema "ref$round"
    local schema=$NEW_SCHEMA
    RUN_SEQ=$((RUN_SEQ + 1))
    pg -c "CREATE SCHEMA $schema" \
        -c "CREATE TABLE $schema.bench_ref (id bigserial PRIMARY KEY, body text NOT NULL)" \
        -c "ALTER TABLE $schema.bench_ref ALTER COLUMN body SET STORAGE EXTERNAL"
    echo "INSERT INTO $schema.bench_ref (body) VALUES (repeat('x', 10240));" >"$dir/ref.sql"
    local common=(-n -f "$dir/ref.sql" -c "$PGBENCH_CLIENTS" -j 2)
    local quiet load_before busy0 busy1 total0 total1 pg0 pg1 wall_start wall_end
    quiet=$(wait_for_quiet)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    timeout $((SAT_WARMUP + 60)) pgbench "${common[@]}" -T "$SAT_WARMUP" "$PG_URL" \
        >"$OUT/logs/$name.warmup.txt" 2>&1 || { echo "pgbench warmup failed; see $OUT/logs/$name.warmup.txt" >&2; exit 1; }
    pg0=$(pg_cpu_snapshot)
    read -r busy0 total0 < <(machine_jiffies)
    wall_start=$(date +%s.%N)
    timeout $((SAT_DURATION + 60)) pgbench "${common[@]}" -T "$SAT_DURATION" "$PG_URL" \
        >"$OUT/logs/$name.txt" 2>&1 || { echo "pgbench failed; see $OUT/logs/$name.txt" >&2; exit 1; }
    wall_end=$(date +%s.%N)
    read -r busy1 total1 < <(machine_jiffies)
    pg1=$(pg_cpu_snapshot)
    local rows pg_cpu
    rows=$(pg -c "SELECT count(*) FROM $schema.bench_ref")
    pg_cpu=$(pg_cpu_delta "$pg0" "$pg1")
    drop_schema "$schema"
    python3 - "$OUT/runs/$name.pgbench.json" "$OUT/logs/$name.txt" "$name" "$round" "$PGBENCH_CLIENTS" \
        "$rows" "$wall_start" "$wall_end" "$load_before" "$quiet" "$((busy1 - busy0))" "$pg_cpu" <<'PY'
import json, os, re, sys
path, log, name, rnd, clients, rows, start, end, load, quiet, busy, pg_cpu = sys.argv[1:]
text = open(log).read()
def num(pattern):
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None
waited, quiet_pct = quiet.split()
report = {
    "name": name, "kind": "pgbench", "mode": "sat", "round": int(rnd), "clients": int(clients),
    "tps": num(r"^tps = ([0-9.]+) \(without initial connection time\)"),
    "transactions": num(r"^number of transactions actually processed: (\d+)"),
    "failed": num(r"^number of failed transactions: (\d+)") or 0,
    "latency_ms": num(r"^latency average = ([0-9.]+) ms"),
    "table_rows_incl_warmup": int(rows),
    "wall_s": round(float(end) - float(start), 2),
    "loadavg_before": float(load),
    "quiet_waited_s": int(waited), "busy_percent_before": int(quiet_pct),
    "machine_cpu_s": int(busy) / os.sysconf("SC_CLK_TCK"),
    "postgres_cpu_s": float(pg_cpu),
}
json.dump(report, open(path, "w"), indent=1)
print(f"   {name}: {report['tps']} tps, {report['transactions']:.0f} transactions, "
      f"failed {report['failed']:.0f}, latency avg {report['latency_ms']} ms, "
      f"postgres cpu {100 * float(pg_cpu) / report['wall_s']:.0f} %", file=sys.stderr)
if report["tps"] is None:
    sys.exit(1)
PY
}

# The delivery drain of round $1 on PostgreSQL: PG_DELIVERIES events
# preloaded with workers off, then two `hookinbox work` processes deliver
# them to `sink`; writes runs/<name>.delivery.json.
measure_delivery() {
    local round=$1 name="delivery-r$1-postgres"
    local dir="$WORK/$name"
    mkdir -p "$dir"
    new_schema "dlv$round"
    local schema=$NEW_SCHEMA
    "$BIN/sink" --listen 127.0.0.1:0 >"$dir/sink.out" 2>"$OUT/logs/$name.sink.log" &
    local sink_pid=$!
    STARTED+=("$sink_pid")
    local sink="" line
    for _ in $(seq 100); do
        line=$(grep -m1 -o 'listening on http://[0-9.:]*' "$dir/sink.out" 2>/dev/null || true)
        [[ -n "$line" ]] && break
        sleep 0.1
    done
    [[ -n "$line" ]] || { echo "sink did not start" >&2; exit 1; }
    sink=${line#listening on http://}
    write_config "$dir" "$schema" "$sink"
    # Preload, workers off.
    start_server postgres "$dir" "$OUT/logs/$name.serve.log" .serve
    local seconds
    seconds=$(python3 -c "print($PG_DELIVERIES / $PG_LOAD_RATE)")
    timeout 300 "$BIN/loadgen" --url "$SERVER_URL/hooks/bench" --scheme "$SCHEME" --rate "$PG_LOAD_RATE" --duration "$seconds" \
        --warmup 0 --max-inflight 8192 --timeout 60 --body-mean 1024 --body-sigma 0 --large-share 0 \
        --run-id "$STAMP-$RUN_SEQ" --json "$OUT/runs/$name.load.json" >"$OUT/logs/$name.load.txt" 2>&1 \
        || { echo "preload failed; see $OUT/logs/$name.load.txt" >&2; exit 1; }
    RUN_SEQ=$((RUN_SEQ + 1))
    stop_server
    local pending
    pending=$(pg -c "SELECT count(*) FROM $schema.delivery WHERE status = 'PENDING'")
    # Drain with two work processes.
    local quiet load_before busy0 busy1 total0 total1 pg0 pg1 start_ms
    quiet=$(wait_for_quiet)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    pg0=$(pg_cpu_snapshot)
    read -r busy0 total0 < <(machine_jiffies)
    start_ms=$(date +%s%3N)
    local works=() i
    for i in 1 2; do
        "$BIN/hookinbox" work --config "$dir/bench.toml" >"$dir/work$i.out" 2>"$OUT/logs/$name.work$i.log" &
        works+=($!)
        STARTED+=("$!")
    done
    local delivered=0 complete=false deadline=$((SECONDS + 300))
    while ((SECONDS < deadline)); do
        delivered=$(pg -c "SELECT count(*) FROM $schema.delivery WHERE status = 'DELIVERED'")
        if ((delivered >= pending)); then complete=true; break; fi
        for i in "${works[@]}"; do
            kill -0 "$i" 2>/dev/null || { echo "work process $i exited; see $OUT/logs/$name.work*.log" >&2; break 2; }
        done
        sleep 0.2
    done
    read -r busy1 total1 < <(machine_jiffies)
    pg1=$(pg_cpu_snapshot)
    local end_ms
    end_ms=$(date +%s%3N)
    local threads
    threads=$(thread_cpu_json "${works[@]}")
    for i in "${works[@]}"; do stop_server "$i"; done
    curl -s "http://$sink/stats" >"$dir/sink.json" 2>/dev/null || echo '{}' >"$dir/sink.json"
    stop_server "$sink_pid"
    local facts pg_cpu
    facts=$(pg -F ' ' -c "SELECT count(*) FILTER (WHERE status = 'DELIVERED'), count(*),
        coalesce(min(delivered_at_ms), 0), coalesce(max(delivered_at_ms), 0), coalesce(sum(attempts), 0)
        FROM $schema.delivery")
    local inbox
    inbox=$(pg -c "SELECT count(*) FROM $schema.inbox")
    pg_cpu=$(pg_cpu_delta "$pg0" "$pg1")
    drop_schema "$schema"
    python3 - "$OUT/runs/$name.delivery.json" "$name" "$round" "$pending" "$inbox" "$facts" "$start_ms" \
        "$complete" "$threads" "$load_before" "$quiet" "$((busy1 - busy0))" "$pg_cpu" "$dir/sink.json" \
        "$end_ms" <<'PY'
import json, os, sys
(path, name, rnd, pending, inbox, facts, start_ms, complete, threads, load, quiet, busy,
 pg_cpu, sink, end_ms) = sys.argv[1:]
delivered, total, first, last, attempts = (int(x) for x in facts.split())
start_ms = int(start_ms)
wall = (last - start_ms) / 1000.0 if last else None
waited, quiet_pct = quiet.split()
work_cpu = sum(t["cpu_s"] for t in json.loads(threads).values())
try:
    sink_stats = json.load(open(sink))
except ValueError:
    sink_stats = {}
report = {
    "name": name, "kind": "postgres", "mode": "delivery", "round": int(rnd), "workers": 2,
    "preloaded_inbox": int(inbox), "pending": int(pending), "deliveries": total,
    "delivered": delivered, "attempts": attempts, "complete": complete == "true",
    "start_ms": start_ms, "first_delivered_ms": first, "last_delivered_ms": last,
    "wall_s": round(wall, 3) if wall else None,
    "deliveries_per_s": round(delivered / wall, 1) if wall else None,
    "steady_per_s": round((delivered - 1) / ((last - first) / 1000.0), 1) if last > first else None,
    "work_threads": json.loads(threads), "work_cpu_s": round(work_cpu, 2),
    "loadavg_before": float(load), "quiet_waited_s": int(waited),
    "busy_percent_before": int(quiet_pct),
    # The CPU figures cover start_ms..window_end_ms (the poll that saw the last delivery).
    "window_end_ms": int(end_ms),
    "window_s": round((int(end_ms) - start_ms) / 1000.0, 3),
    "machine_cpu_s": int(busy) / os.sysconf("SC_CLK_TCK"),
    "postgres_cpu_s": float(pg_cpu), "sink": sink_stats,
}
json.dump(report, open(path, "w"), indent=1)
print(f"   {name}: {delivered} / {pending} delivered in {report['wall_s']} s = "
      f"{report['deliveries_per_s']} deliveries/s (first→last {report['steady_per_s']}), "
      f"attempts {attempts}, work cpu {work_cpu:.2f} s, postgres cpu {float(pg_cpu):.2f} s",
      file=sys.stderr)
sys.exit(0 if report["complete"] else 1)
PY
}

{
    pg_args=""
    [[ -n "$PG_URL" ]] && pg_args=" --postgres $PG_URL --pgbench-clients $PGBENCH_CLIENTS --pg-deliveries $PG_DELIVERIES --pg-load-rate $PG_LOAD_RATE --pg-work-concurrency $PG_WORK_CONCURRENCY"
    echo "command: bench/run.sh --rounds $ROUNDS --rate $RATE --duration $DURATION --warmup $WARMUP --sat-duration $SAT_DURATION --sat-warmup $SAT_WARMUP --concurrency \"$CONCURRENCY\" --scheme $SCHEME --ablations \"$ABLATIONS\" --profile $PROFILE$pg_args"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!bench/out' || echo ' (dirty)')"
    echo "rustc: $(rustc --version)"
    [[ -n "$PG_URL" ]] && echo "postgres: $(pg -c 'SHOW server_version'), synchronous_commit=$(pg -c 'SHOW synchronous_commit'), fsync=$(pg -c 'SHOW fsync'), shared_buffers=$(pg -c 'SHOW shared_buffers')"
} >"$OUT/facts.txt"
cat "$OUT/facts.txt" >&2

KINDS="hookinbox $ABLATIONS baseline"
[[ -n "$PG_URL" ]] && KINDS="$KINDS postgres"
KINDS=$(echo $KINDS)
[[ -n "$ONLY_KINDS" ]] && KINDS=$ONLY_KINDS
for round in $(seq "$ROUNDS"); do
    # Alternate which target goes first, so none always runs on a warmer
    # (or busier) machine.
    if ((round % 2)); then order=$KINDS; else order=$(echo "$KINDS" | tr ' ' '\n' | tac | tr '\n' ' '); fi
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
    if [[ -n "$PG_URL" ]]; then
        echo "== round $round/$ROUNDS: pgbench reference, $PGBENCH_CLIENTS clients, one ~10 KiB row per transaction" >&2
        measure_pgbench "$round"
        if ((PG_DELIVERIES > 0)); then
            echo "== round $round/$ROUNDS: postgres delivery drain, $PG_DELIVERIES events, two work processes" >&2
            measure_delivery "$round"
        fi
    fi
done

python3 "$BENCH/summarize.py" "$OUT" | tee "$OUT/summary.md"
echo "raw results: $OUT" >&2
