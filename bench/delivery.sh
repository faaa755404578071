#!/usr/bin/env bash
# Delivery benchmark of hookinbox (results: bench/RESULTS.md, section 2):
#
#  (a) throughput: the outbox is filled first (`hookinbox serve --no-workers`,
#      loadgen open loop), then `hookinbox work` drains it to a local sink;
#      deliveries/s = delivered / (last delivered_at_ms - start of `work`).
#      Repeated RUNS times for every concurrency in CONCURRENCIES.
#  (b) latency: `hookinbox serve` with its workers, the sink up, loadgen open
#      loop at LAT_RATE req/s for LAT_DURATION s; afterwards receive->delivered
#      per event from the DB (delivery.delivered_at_ms - inbox.received_at_ms),
#      and a check that every accepted event was delivered. Repeated RUNS times
#      for every concurrency in LAT_CONCURRENCIES.
#
# Everything listens on 127.0.0.1 (port 0), every wait is bounded, every
# process started here is stopped here. Raw outputs: $OUT (under bench/out/).
#
# Knobs (environment):
#   RUNS=3  N_EVENTS=30000  LOAD_RATE=3000  CONCURRENCIES="8 32 64"
#   LAT_RATE=2000  LAT_DURATION=20  LAT_CONCURRENCIES="8"
#   THROUGHPUT_BODY="--body-mean 1024 --body-sigma 0 --large-share 0"   (loadgen flags)
#   LATENCY_BODY=""                         (loadgen's default mixture: mean 10 KiB, 0.2 % at 1 MB)
#   PHASES="throughput latency"  BUILD=1  PERF=0 (1: perf record the first run of each phase)
#   VARIANTS="current=target/release/hookinbox"  (space-separated label=binary: several builds
#            compared run by run, interleaved, for before/after numbers on a noisy machine)
#   NICE=0   (e.g. -10: run hookinbox, sink and loadgen ahead of other work on the machine;
#             needs root. 0 measures them as ordinary processes among whatever else runs.)
#   KEEP_DB=0  (1: keep each run's SQLite file for analysis; they are large)
#   TARGET=http  (or rabbitmq: into a durable queue on $RABBITMQ_URL, declared and deleted per
#                run by bench's amqp_queue; or redis_stream: XADD to a stream on $REDIS_URL,
#                deleted per run with redis-cli; or nats: JetStream publish into a file stream on
#                $NATS_URL, declared and deleted per run by bench/nats_stream.py; or mqtt: QoS 1
#                publish to $MQTT_URL (each delivery counted after its PUBACK; with no subscriber,
#                so "in the broker" is not counted). The sink then runs idle.)
#   SEALED=1  (the default configuration: every body sealed under a key made at start;
#             0: `allow_plaintext`, the ablation every delivery section before issue 21 ran)
#   TRANSFORM=0  (1: the target has a Svix-style `transform` that renames the payload's
#             fields and adds a header, so each delivery also runs QuickJS: issue 21)
#   BIN=target/release  (where loadgen, sink and amqp_queue are)
#   OUT=bench/out/delivery-<date>
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-3}
N_EVENTS=${N_EVENTS:-30000}
LOAD_RATE=${LOAD_RATE:-3000}
CONCURRENCIES=${CONCURRENCIES:-"8 32 64"}
LAT_RATE=${LAT_RATE:-2000}
LAT_DURATION=${LAT_DURATION:-20}
LAT_CONCURRENCIES=${LAT_CONCURRENCIES:-"8"}
THROUGHPUT_BODY=${THROUGHPUT_BODY:-"--body-mean 1024 --body-sigma 0 --large-share 0"}
LATENCY_BODY=${LATENCY_BODY:-""}
PHASES=${PHASES:-"throughput latency"}
BUILD=${BUILD:-1}
PERF=${PERF:-0}
NICE=${NICE:-0}
KEEP_DB=${KEEP_DB:-0}
TARGET=${TARGET:-http}
SEALED=${SEALED:-1}
TRANSFORM=${TRANSFORM:-0}
RABBITMQ_URL=${RABBITMQ_URL:-amqp://guest:guest@127.0.0.1:5672/%2f}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
MQTT_URL=${MQTT_URL:-mqtt://127.0.0.1:1883}
BROKER_NAME=hookinbox-bench-$$
VARIANTS=${VARIANTS:-"current=$ROOT/target/release/hookinbox"}
OUT=${OUT:-$ROOT/bench/out/delivery-$(date -u +%Y%m%dT%H%M%SZ)}
# Generous bounds: a run that needs longer than this is reported incomplete.
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-300}
SETTLE_TIMEOUT=${SETTLE_TIMEOUT:-120}

# Development secrets of the benchmark only.
LAB_SECRET="bench-delivery-lab-secret"
TARGET_SECRET="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
export LOADGEN_SECRET=$LAB_SECRET
export RUST_LOG=${RUST_LOG:-warn}

BIN=${BIN:-$ROOT/target/release}
PY="python3 $ROOT/bench/delivery.py"
mkdir -p "$OUT"

if [ "$BUILD" = 1 ]; then
    cargo build --release -p hookinbox -p hookinbox-bench >"$OUT/build.log" 2>&1 \
        || { tail -30 "$OUT/build.log"; exit 1; }
fi

# --- processes ---------------------------------------------------------------

STARTED=()
cleanup() {
    for pid in "${STARTED[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

# start NAME DIR CMD...: runs CMD in the background, stdout/stderr in DIR/NAME.{out,err}; sets $PID.
start() {
    local name=$1 dir=$2
    shift 2
    nice -n "$NICE" "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
    PID=$!
    STARTED+=("$PID")
}

# listening DIR NAME PREFIX: waits (≤ 20 s) for "PREFIX http://ADDR" on NAME's stdout; prints ADDR.
listening() {
    local file=$1/$2.out prefix=$3
    for _ in $(seq 200); do
        if line=$(grep -m1 "^$prefix http://" "$file" 2>/dev/null); then
            echo "${line#"$prefix http://"}"
            return 0
        fi
        sleep 0.1
    done
    echo "no '$prefix' line from $2 (see $file, ${file%.out}.err)" >&2
    return 1
}

# stop PID: SIGTERM, then SIGKILL after 20 s.
stop() {
    local pid=$1 kept=() p
    for p in "${STARTED[@]}"; do [ "$p" = "$pid" ] || kept+=("$p"); done
    STARTED=("${kept[@]:-}")
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    echo "pid $pid did not stop in 20 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# cpu_s PID: user + system CPU seconds of a live process.
cpu_s() {
    awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"
}

now_ms() { date +%s%3N; }

# target_block SINK_ADDR CONCURRENCY: the [[endpoint.target]] of one run, per $TARGET.
target_block() {
    case $TARGET in
    http) printf 'name = "sink"\nkind = "http"\nurl = "http://%s/deliveries"\nsecret = "%s"\n' "$1" "$TARGET_SECRET" ;;
    rabbitmq) printf 'name = "amqp"\nkind = "rabbitmq"\nurl = "%s"\nexchange = "%s"\nrouting_key = "bench.{endpoint}.{event_type}"\n' "$RABBITMQ_URL" "$BROKER_NAME" ;;
    redis_stream) printf 'name = "stream"\nkind = "redis_stream"\nurl = "%s"\nstream = "%s:{endpoint}"\n' "$REDIS_URL" "$BROKER_NAME" ;;
    nats) printf 'name = "nats"\nkind = "nats"\nurl = "%s"\nsubject = "%s.{endpoint}"\n' "$NATS_URL" "$BROKER_NAME" ;;
    mqtt) printf 'name = "mqtt"\nkind = "mqtt"\nurl = "%s"\ntopic = "%s/{endpoint}"\n' "$MQTT_URL" "$BROKER_NAME" ;;
    *) echo "TARGET must be http, rabbitmq, redis_stream, nats or mqtt" >&2; exit 2 ;;
    esac
    printf 'timeout = "5s"\nconcurrency = %s\n' "$2"
    if [ "$TRANSFORM" = 1 ]; then printf 'transform = "reshape.js"\n'; fi
}

# broker_reset: an empty queue or stream for the next run (nothing for http).
broker_reset() {
    case $TARGET in
    rabbitmq)
        "$BIN/amqp_queue" --url "$RABBITMQ_URL" --exchange "$BROKER_NAME" --queue "$BROKER_NAME" delete 2>/dev/null || true
        "$BIN/amqp_queue" --url "$RABBITMQ_URL" --exchange "$BROKER_NAME" --queue "$BROKER_NAME" declare ;;
    redis_stream) redis-cli -u "$REDIS_URL" DEL "$BROKER_NAME:lab" >/dev/null ;;
    nats)
        python3 "$ROOT/bench/nats_stream.py" --url "$NATS_URL" --stream "$BROKER_NAME" delete 2>/dev/null || true
        python3 "$ROOT/bench/nats_stream.py" --url "$NATS_URL" --stream "$BROKER_NAME" declare ;;
    esac
}

# broker_count: messages the broker holds after a run ("" for http).
broker_count() {
    case $TARGET in
    rabbitmq) "$BIN/amqp_queue" --url "$RABBITMQ_URL" --exchange "$BROKER_NAME" --queue "$BROKER_NAME" count ;;
    redis_stream) redis-cli -u "$REDIS_URL" XLEN "$BROKER_NAME:lab" ;;
    nats) python3 "$ROOT/bench/nats_stream.py" --url "$NATS_URL" --stream "$BROKER_NAME" count ;;
    *) echo '""' ;;
    esac
}

# encryption_block: the [encryption] section of one run, per $SEALED.
encryption_block() {
    if [ "$SEALED" = 1 ]; then
        printf '[[encryption.key]]\nid = "bench-1"\nvalue_file = "bench.key"\ncreate_if_missing = true\n'
    else
        printf '[encryption]\nallow_plaintext = true\n'
    fi
}

# config DIR SINK_ADDR CONCURRENCY: the hookinbox config of one run.
config() {
    # A Svix-style script, as a user pastes one: the payload renamed and
    # wrapped, one header added (only read when TRANSFORM=1).
    cat >"$1/reshape.js" <<'JS'
function handler(webhook) {
  const event = webhook.payload;
  webhook.payload = { event_id: event.id, kind: event.type, received_at: webhook.receivedAt, data: event };
  webhook.headers["X-Team"] = "billing";
  return webhook;
}
JS
    cat >"$1/hookinbox.toml" <<EOF
[storage]
url = "sqlite://hookinbox.db"

$(encryption_block)

[delivery]
poll_interval = "250ms"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "bench"
value = "$LAB_SECRET"

[[endpoint.target]]
$(target_block "$2" "$3")
EOF
}

# result DIR key=json-file|key=number …: merges into DIR/result.json.
result() {
    local dir=$1
    shift
    python3 - "$dir" "$@" <<'EOF'
import json, sys
out = {}
for item in sys.argv[2:]:
    key, value = item.split("=", 1)
    if value.endswith(".json"):
        try:
            with open(value) as f:
                out[key] = json.load(f)
        except (OSError, ValueError):
            out[key] = None
    else:
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
with open(sys.argv[1] + "/result.json", "w") as f:
    json.dump(out, f, indent=1)
EOF
}

perf_start() {
    PERF_PID=
    if [ "$PERF" = 1 ] && [ "$2" = 1 ]; then
        perf record -F "${PERF_FREQ:-999}" --call-graph "${PERF_CALLGRAPH:-dwarf,32768}" -p "$1" -o "$3/perf.data" >"$3/perf.log" 2>&1 &
        PERF_PID=$!
    fi
}

perf_stop() {
    if [ -n "${PERF_PID:-}" ]; then
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
        perf report -i "$1/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null \
            | head -150 >"$1/perf.txt" || true
    fi
}

# --- (a) throughput ----------------------------------------------------------

# After a measured run: stops the server (serve or work) and the sink, and
# records their CPU (SERVER_CPU, SINK_CPU), the sink's counts, per-thread CPU
# and the machine's busy share (BUSY). Extra arguments go to `delivery.py cpu`.
collect() {
    local dir=$1 server_pid=$2 sink_pid=$3 sink=$4
    shift 4
    head -1 /proc/stat >"$dir/stat.after"
    perf_stop "$dir"
    SERVER_CPU=$(cpu_s "$server_pid")
    $PY threads --pid "$server_pid" >"$dir/threads.json"
    SINK_CPU=$(cpu_s "$sink_pid")
    stop "$server_pid"
    curl -s "http://$sink/stats" >"$dir/sink.json" 2>/dev/null || true
    stop "$sink_pid"
    $PY cpu --before "$dir/stat.before" --after "$dir/stat.after" \
        --ours "$SERVER_CPU" --ours "$SINK_CPU" "$@" >"$dir/cpu.json"
    BUSY=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['machine_busy_percent'])" "$dir/cpu.json")
}

throughput_run() {
    local c=$1 k=$2 label=$3 hookinbox=$4 dir
    dir=$OUT/throughput-$label-c$(printf %03d "$c")-r$k
    mkdir -p "$dir"
    start sink "$dir" "$BIN/sink" --listen 127.0.0.1:0
    local sink_pid=$PID sink
    sink=$(listening "$dir" sink "sink listening on")
    config "$dir" "$sink" "$c"
    broker_reset

    # Fill the outbox with ingress only.
    start serve "$dir" "$hookinbox" serve --config "$dir/hookinbox.toml" --listen 127.0.0.1:0 --no-workers
    local serve_pid=$PID addr
    addr=$(listening "$dir" serve "hookinbox listening on")
    local seconds
    seconds=$(python3 -c "print($N_EVENTS / $LOAD_RATE)")
    # shellcheck disable=SC2086
    nice -n "$NICE" timeout 300 "$BIN/loadgen" --url "http://$addr/hooks/lab" --rate "$LOAD_RATE" \
        --duration "$seconds" --warmup 0 --max-inflight 8192 --timeout 60 $THROUGHPUT_BODY --json "$dir/load.json" >"$dir/load.txt" 2>&1
    stop "$serve_pid"
    local pending
    pending=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM delivery WHERE status='PENDING'\").fetchone()[0])" "$dir/hookinbox.db")

    # Drain it.
    head -1 /proc/stat >"$dir/stat.before"
    local start_ms
    start_ms=$(now_ms)
    start work "$dir" "$hookinbox" work --config "$dir/hookinbox.toml"
    local work_pid=$PID
    perf_start "$work_pid" "$k" "$dir"
    local complete=true
    local sink_url=http://$sink
    [ "$TARGET" = http ] || sink_url=
    $PY wait --db "$dir/hookinbox.db" --sink "$sink_url" --expect "$pending" \
        --timeout "$DRAIN_TIMEOUT" >"$dir/wait.json" || complete=false
    collect "$dir" "$work_pid" "$sink_pid" "$sink"
    local work_cpu=$SERVER_CPU sink_cpu=$SINK_CPU busy=$BUSY in_broker
    in_broker=$(broker_count)
    $PY throughput --db "$dir/hookinbox.db" --start-ms "$start_ms" >"$dir/throughput.json"
    result "$dir" variant="$label" target="$TARGET" sealed="$SEALED" transform="$TRANSFORM" in_broker="$in_broker" concurrency="$c" run="$k" events="$pending" complete="$complete" \
        work_cpu_s="$work_cpu" sink_cpu_s="$sink_cpu" machine_busy_percent="$busy" cpu="$dir/cpu.json" \
        throughput="$dir/throughput.json" threads="$dir/threads.json" sink="$dir/sink.json" load="$dir/load.json"
    [ "$KEEP_DB" = 1 ] || rm -rf "$dir"/hookinbox.db*
    echo "throughput $TARGET sealed=$SEALED transform=$TRANSFORM $label c=$c run=$k: in broker $in_broker; $(cat "$dir/throughput.json") work_cpu=${work_cpu}s sink_cpu=${sink_cpu}s $(cat "$dir/cpu.json")"
}

# --- (b) latency -------------------------------------------------------------

latency_run() {
    local c=$1 k=$2 label=$3 hookinbox=$4 dir
    dir=$OUT/latency-$label-c$(printf %03d "$c")-r$k
    mkdir -p "$dir"
    start sink "$dir" "$BIN/sink" --listen 127.0.0.1:0
    local sink_pid=$PID sink
    sink=$(listening "$dir" sink "sink listening on")
    config "$dir" "$sink" "$c"
    broker_reset
    start serve "$dir" "$hookinbox" serve --config "$dir/hookinbox.toml" --listen 127.0.0.1:0
    local serve_pid=$PID addr
    addr=$(listening "$dir" serve "hookinbox listening on")
    perf_start "$serve_pid" "$k" "$dir"
    head -1 /proc/stat >"$dir/stat.before"
    # shellcheck disable=SC2086
    nice -n "$NICE" timeout $((LAT_DURATION + 120)) "$BIN/loadgen" --url "http://$addr/hooks/lab" --rate "$LAT_RATE" \
        --duration "$LAT_DURATION" --warmup 0 $LATENCY_BODY --json "$dir/load.json" >"$dir/load.txt" 2>&1 || true
    local inbox
    inbox=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM inbox').fetchone()[0])" "$dir/hookinbox.db")
    local complete=true
    local sink_url=http://$sink
    [ "$TARGET" = http ] || sink_url=
    $PY wait --db "$dir/hookinbox.db" --sink "$sink_url" --expect "$inbox" \
        --timeout "$SETTLE_TIMEOUT" >"$dir/wait.json" || complete=false
    collect "$dir" "$serve_pid" "$sink_pid" "$sink" --loadgen-json "$dir/load.json"
    local serve_cpu=$SERVER_CPU sink_cpu=$SINK_CPU busy=$BUSY
    $PY latency --db "$dir/hookinbox.db" >"$dir/latency.json"
    result "$dir" variant="$label" concurrency="$c" run="$k" rate="$LAT_RATE" complete="$complete" \
        serve_cpu_s="$serve_cpu" sink_cpu_s="$sink_cpu" machine_busy_percent="$busy" cpu="$dir/cpu.json" \
        latency="$dir/latency.json" threads="$dir/threads.json" sink="$dir/sink.json" loadgen="$dir/load.json"
    [ "$KEEP_DB" = 1 ] || rm -rf "$dir"/hookinbox.db*
    echo "latency $label c=$c run=$k: $(cat "$dir/latency.json") serve_cpu=${serve_cpu}s $(cat "$dir/cpu.json")"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' (+ uncommitted changes)')"
    echo "machine: $(nproc) cores, $(uname -r)"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    for variant in $VARIANTS; do
        echo "variant ${variant%%=*}: ${variant#*=} ($(sha256sum "${variant#*=}" | cut -c1-12))"
    done
    echo "NICE=$NICE TARGET=$TARGET SEALED=$SEALED TRANSFORM=$TRANSFORM"
    echo "RUNS=$RUNS N_EVENTS=$N_EVENTS LOAD_RATE=$LOAD_RATE CONCURRENCIES=\"$CONCURRENCIES\""
    echo "LAT_RATE=$LAT_RATE LAT_DURATION=$LAT_DURATION LAT_CONCURRENCIES=\"$LAT_CONCURRENCIES\""
    echo "THROUGHPUT_BODY=\"$THROUGHPUT_BODY\" LATENCY_BODY=\"$LATENCY_BODY\""
} | tee "$OUT/meta.txt"

# Runs are interleaved (every variant and concurrency once, then again) so
# slow drifts of the shared machine's load spread over every setting
# instead of biasing one.
for phase in $PHASES; do
    for k in $(seq "$RUNS"); do
        if [ "$phase" = throughput ]; then
            list=$CONCURRENCIES
        else
            list=$LAT_CONCURRENCIES
        fi
        for c in $list; do
            for variant in $VARIANTS; do
                "${phase}_run" "$c" "$k" "${variant%%=*}" "${variant#*=}"
            done
        done
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/meta.txt"
case $TARGET in
rabbitmq) "$BIN/amqp_queue" --url "$RABBITMQ_URL" --exchange "$BROKER_NAME" --queue "$BROKER_NAME" delete || true ;;
redis_stream) redis-cli -u "$REDIS_URL" DEL "$BROKER_NAME:lab" >/dev/null || true ;;
nats) python3 "$ROOT/bench/nats_stream.py" --url "$NATS_URL" --stream "$BROKER_NAME" delete || true ;;
esac

$PY summary --dir "$OUT" | tee "$OUT/summary.md"
echo "raw outputs: $OUT"
