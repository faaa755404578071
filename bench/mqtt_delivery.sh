#!/usr/bin/env bash
# Delivery throughput of an `mqtt` target (results: bench/RESULTS.md, summary
# and section 2m), measured as bench/delivery.sh measures the http target:
# the outbox is filled first (`hookinbox serve --no-workers`, loadgen open
# loop, 1 KiB bodies), then `hookinbox work` drains it to the MQTT broker at
# MQTT_URL (Mosquitto, QoS 1, each DELIVERED after its PUBACK) while a
# `mosquitto_sub` at QoS 1 counts what reaches a subscriber;
# deliveries/s = delivered / (last delivered_at_ms - start of `work`).
# Repeated RUNS times for every concurrency in CONCURRENCIES.
#
# Knobs (environment):
#   RUNS=3  N_EVENTS=20000  LOAD_RATE=4000  CONCURRENCIES="64"  PROTOCOL=5
#   MQTT_URL=mqtt://127.0.0.1:1883  BUILD=1  OUT=bench/out/mqtt-<date>
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
RUNS=${RUNS:-3}
N_EVENTS=${N_EVENTS:-20000}
LOAD_RATE=${LOAD_RATE:-4000}
CONCURRENCIES=${CONCURRENCIES:-"64"}
PROTOCOL=${PROTOCOL:-5}
MQTT_URL=${MQTT_URL:-mqtt://127.0.0.1:1883}
BUILD=${BUILD:-1}
OUT=${OUT:-$ROOT/bench/out/mqtt-$(date -u +%Y%m%dT%H%M%SZ)}
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-300}

LAB_SECRET="bench-delivery-lab-secret"
export LOADGEN_SECRET=$LAB_SECRET
export RUST_LOG=${RUST_LOG:-warn}
BIN=$ROOT/target/release
PY="python3 $ROOT/bench/delivery.py"
BROKER=${MQTT_URL#mqtt://}
BROKER=${BROKER%/}
mkdir -p "$OUT"

if [ "$BUILD" = 1 ]; then
    cargo build --release -p hookinbox -p hookinbox-bench >"$OUT/build.log" 2>&1 \
        || { tail -30 "$OUT/build.log"; exit 1; }
fi

STARTED=()
cleanup() {
    for pid in "${STARTED[@]:-}"; do
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

# start NAME DIR CMD...: CMD in the background, output in DIR/NAME.{out,err}; sets $PID.
start() {
    local name=$1 dir=$2
    shift 2
    "$@" >"$dir/$name.out" 2>"$dir/$name.err" &
    PID=$!
    STARTED+=("$PID")
}

# stop PID: SIGTERM, then SIGKILL after 20 s.
stop() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cpu_s() {
    awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"
}

now_ms() { date +%s%3N; }

# delivered_count DB: DELIVERED rows.
delivered_count() {
    python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM delivery WHERE status='DELIVERED'\").fetchone()[0])" "$1"
}

config() {
    cat >"$1/hookinbox.toml" <<EOF
[storage]
url = "sqlite://hookinbox.db"

[encryption]
allow_plaintext = true

[delivery]
poll_interval = "250ms"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "bench"
value = "$LAB_SECRET"

[[endpoint.target]]
name = "broker"
kind = "mqtt"
url = "$MQTT_URL"
topic = "$3/{endpoint}/{event_type}"
protocol = "$PROTOCOL"
timeout = "5s"
concurrency = $2
EOF
}

for c in $CONCURRENCIES; do
    for k in $(seq "$RUNS"); do
        dir=$OUT/c$(printf %03d "$c")-r$k
        mkdir -p "$dir"
        prefix="hookinbox-bench/$(date +%s%N)"
        config "$dir" "$c" "$prefix"

        start serve "$dir" "$BIN/hookinbox" serve --config "$dir/hookinbox.toml" --listen 127.0.0.1:0 --no-workers
        serve_pid=$PID
        addr=
        for _ in $(seq 200); do
            if line=$(grep -m1 "^hookinbox listening on http://" "$dir/serve.out" 2>/dev/null); then
                addr=${line#"hookinbox listening on http://"}
                break
            fi
            sleep 0.1
        done
        [ -n "$addr" ] || { echo "serve did not start (see $dir/serve.err)" >&2; exit 1; }
        seconds=$(python3 -c "print($N_EVENTS / $LOAD_RATE)")
        timeout 300 "$BIN/loadgen" --url "http://$addr/hooks/lab" --rate "$LOAD_RATE" \
            --duration "$seconds" --warmup 0 --max-inflight 8192 --timeout 60 \
            --body-mean 1024 --body-sigma 0 --large-share 0 --json "$dir/load.json" >"$dir/load.txt" 2>&1
        stop "$serve_pid"
        pending=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM delivery WHERE status='PENDING'\").fetchone()[0])" "$dir/hookinbox.db")

        # A subscriber at QoS 1, subscribed before the drain starts.
        start sub "$dir" mosquitto_sub -h "${BROKER%:*}" -p "${BROKER##*:}" -V mqttv5 -q 1 -t "$prefix/#" -F '%t'
        sub_pid=$PID
        sleep 0.5

        head -1 /proc/stat >"$dir/stat.before"
        start_ms=$(now_ms)
        start work "$dir" "$BIN/hookinbox" work --config "$dir/hookinbox.toml"
        work_pid=$PID
        deadline=$((SECONDS + DRAIN_TIMEOUT))
        complete=true
        until [ "$(delivered_count "$dir/hookinbox.db")" -ge "$pending" ]; do
            if ((SECONDS >= deadline)); then complete=false; break; fi
            sleep 0.05
        done
        head -1 /proc/stat >"$dir/stat.after"
        work_cpu=$(cpu_s "$work_pid")
        stop "$work_pid"
        sleep 0.5
        stop "$sub_pid"
        received=$(wc -l <"$dir/sub.out")
        $PY cpu --before "$dir/stat.before" --after "$dir/stat.after" --ours "$work_cpu" >"$dir/cpu.json"
        $PY throughput --db "$dir/hookinbox.db" --start-ms "$start_ms" >"$dir/throughput.json"
        rm -rf "$dir"/hookinbox.db*
        echo "mqtt c=$c run=$k protocol=$PROTOCOL: events=$pending complete=$complete subscriber_received=$received" \
            "work_cpu=${work_cpu}s $(cat "$dir/throughput.json") $(cat "$dir/cpu.json")" | tee -a "$OUT/summary.txt"
    done
done
