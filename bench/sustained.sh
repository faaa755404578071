#!/usr/bin/env bash
# bench/sustained.sh — issue 20, item 6: the default configuration (SQLite,
# sealed, info logs) under RATE req/s for WINDOWS consecutive 30-second
# windows on one server, one loadgen run per window (a second or two of
# generator start-up between windows). Per window: ack p50/p99/p99.9/max,
# 2xx, refusals, client errors, server CPU, the data directory's size, the
# WAL's size, the log's size, and the CPU other processes took. At the end
# the server is stopped and its rows are compared with the 2xx received: a
# 2xx without its row fails the run.
#
# Usage: RATE=4000 WINDOWS=20 bench/sustained.sh      (release binaries in target/release)
# Results: the table on stdout; raw loadgen JSON in bench/out/sustained-<UTC>/.
set -euo pipefail
# bench_config
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
RATE=${RATE:-4000}
WINDOWS=${WINDOWS:-20}
BIN=${BIN:-$PWD/target/release}
OUT=${OUT:-$PWD/bench/out/sustained-$(date -u +%Y%m%dT%H%M%SZ)}
SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')"
mkdir -p "$OUT"
WORK=$(mktemp -d)
trap 'kill -TERM "${spid:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
bench_config "$WORK/bench.toml" standard "$SECRET"
bench_serve "$BIN" "$WORK"
echo "| window | p50 ms | p99 ms | p99.9 ms | max ms | 2xx | refused | client errors | server CPU | data MB | WAL MB | log bytes | others' CPU |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for w in $(seq "$WINDOWS"); do
    c0=$(awk '{print $14+$15}' "/proc/$spid/stat"); s0=$(head -1 /proc/stat); t0=$(date +%s.%N)
    nice -n -10 "$BIN/loadgen" --url "$URL/hooks/bench" --secret "$SECRET" --scheme standard \
        --rate "$RATE" --duration 30 --warmup 0 --max-inflight 8192 --seed "$w" \
        --run-id "sustained-$w" --json "$OUT/w$w.json" >"$OUT/w$w.txt" 2>&1
    c1=$(awk '{print $14+$15}' "/proc/$spid/stat"); s1=$(head -1 /proc/stat); t1=$(date +%s.%N)
    python3 - "$w" "$OUT/w$w.json" "$c0" "$c1" "$t0" "$t1" "$s0" "$s1" "$WORK" <<'PY'
import glob, json, os, sys
w, f, c0, c1, t0, t1, s0, s1, d = sys.argv[1:]
j = json.load(open(f)); lat = j["latency_us"]
elapsed = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / 100 / elapsed * 100
a = [int(x) for x in s0.split()[1:]]; b = [int(x) for x in s1.split()[1:]]
total = sum(b) - sum(a); idle = (b[3] - a[3]) + (b[4] - a[4])
busy = (total - idle) / total * 100 * os.cpu_count()
others = max(0.0, busy - cpu - j.get("generator_cpu_percent", 0))
size = lambda pattern: sum(os.path.getsize(p) for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)) / 1e6
data = size(d + "/inbox.db*") + size(d + "/inbox.db-payloads/**")
cells = [w] + [round(lat[k] / 1000, 2) for k in ("p50", "p99", "p99_9", "max")]
cells += [j["ok"], sum(j["non_2xx"].values()), sum(j["errors"].values()), f"{cpu:.0f} %",
          round(data), round(size(d + "/inbox.db-wal")), os.path.getsize(d + "/log"), f"{others:.0f} %"]
print("| " + " | ".join(str(c) for c in cells) + " |")
PY
done
kill -TERM "$spid"; wait "$spid" || true
rows=$("$BIN/hookinbox" stats --json --config "$WORK/bench.toml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
acked=$(python3 -c 'import json,sys; print(sum(json.load(open(f))["ok"] for f in sys.argv[1:]))' "$OUT"/w*.json)
echo "rows $rows, 2xx $acked"
if ((rows < acked)); then echo "FAIL: fewer rows than 2xx" >&2; exit 1; fi
