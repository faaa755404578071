#!/usr/bin/env bash
# bench/index_cost.sh — what the admin list indexes (#10: inbox_received,
# inbox_endpoint_received, inbox_type_received) cost ingress on SQLite.
#
# The same release binary, alternately on a fresh database as migrated
# ("with") and on one whose three indexes were dropped after the migration
# ("without"), each saturated by loadgen (closed loop) for --duration s after
# a warm-up. Prints acks/s per run and the medians. Everything on 127.0.0.1;
# every step has a time limit.
#
# Usage: bench/index_cost.sh [--rounds 3] [--concurrency 256] [--duration 20]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=3 CONC=256 DURATION=20 WARMUP=5
while (($#)); do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --concurrency) CONC=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=target/release
SECRET=index-cost-bench-secret-01
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() { # $1 = with|without; prints acks/s
  local dir="$OUT/$1.$2"
  mkdir -p "$dir"
  cat >"$dir/bench.toml" <<TOML
[storage]
url = "sqlite://inbox.db"
queue_capacity = 16384
[encryption]
allow_plaintext = true
[[endpoint]]
id = "bench"
provider = "lab"
[[endpoint.secret]]
version = "bench-1"
value = "$SECRET"
TOML
  timeout 60 "$BIN/hookinbox" migrate --config "$dir/bench.toml" >/dev/null 2>&1
  if [[ $1 == without ]]; then
    sqlite3 "$dir/inbox.db" "DROP INDEX inbox_received; DROP INDEX inbox_endpoint_received; DROP INDEX inbox_type_received;"
  fi
  timeout $((DURATION + WARMUP + 60)) "$BIN/hookinbox" serve --config "$dir/bench.toml" --listen 127.0.0.1:0 \
    >"$dir/serve.out" 2>"$dir/serve.log" &
  local pid=$!
  local url=""
  for _ in $(seq 100); do
    url=$(grep -so 'http://[0-9.:]*' "$dir/serve.out" | head -1 || true)
    [[ -n $url ]] && break
    sleep 0.1
  done
  [[ -n $url ]] || { echo "serve did not start" >&2; kill "$pid"; exit 1; }
  timeout $((DURATION + WARMUP + 60)) "$BIN/loadgen" --url "$url/hooks/bench" --secret "$SECRET" \
    --saturate --concurrency "$CONC" --duration "$DURATION" --warmup "$WARMUP" \
    --json "$dir/load.json" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ack_rate"]))' "$dir/load.json"
}

declare -A results
for round in $(seq "$ROUNDS"); do
  for variant in with without; do
    rate=$(run "$variant" "$round")
    echo "round $round: $variant indexes: $rate acks/s"
    results[$variant]+="$rate "
  done
done
for variant in with without; do
  echo "$variant: median $(tr ' ' '\n' <<<"${results[$variant]}" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}') acks/s (${results[$variant]% })"
done
