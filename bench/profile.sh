#!/usr/bin/env bash
# bench/profile.sh — instructions per request, by pipeline stage, under
# callgrind (issue 20). Wall-clock numbers on a shared machine move with the
# neighbours' builds; instruction counts do not, so this is the profile that
# can be compared between commits.
#
# Runs `hookinbox serve` (or the no-storage `baseline`) from the `profiling`
# build (release code with line tables) under `valgrind --tool=callgrind`,
# sends --requests signed requests at --rate from loadgen (open loop, no
# warmup), and counts only while the load runs: collection is switched on
# just before loadgen starts and dumped just after it ends, so start-up and
# shutdown are not in the counts. Prints instructions per request, in total
# and inclusive in the functions that stand for each stage, and keeps the
# callgrind file for `callgrind_annotate`.
#
# Usage: bench/profile.sh [--variant sealed|plaintext|baseline] [--scheme standard|stripe|lab]
#                         [--log info|warn] [--requests N] [--rate R] [--out DIR] [--no-build]
#
# The default is what users run: sealed bodies, info logs; Standard Webhooks.
set -euo pipefail
# bench_config
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

VARIANT=sealed
SCHEME=standard
LOG=info
REQUESTS=300
RATE=15
OUT=""
BUILD=1
while (($#)); do
    case "$1" in
    --variant) VARIANT=$2; shift 2 ;;
    --scheme) SCHEME=$2; shift 2 ;;
    --log) LOG=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$ROOT/target/profiling"
if ((BUILD)); then
    (cd "$ROOT" && cargo build --profile profiling -p hookinbox -p hookinbox-bench)
fi
command -v valgrind >/dev/null || { echo "needs valgrind" >&2; exit 2; }
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-"$ROOT/bench/out/profile-$STAMP-$VARIANT-$SCHEME-$LOG"}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hookinbox-profile.XXXXXX")
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

random_b64() { head -c 24 /dev/urandom | base64 | tr -d '\n'; }
case "$SCHEME" in
standard) PROVIDER=standard; LOADGEN_SECRET="whsec_$(random_b64)" ;;
stripe) PROVIDER=stripe; LOADGEN_SECRET="whsec_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')" ;;
lab) PROVIDER=lab; LOADGEN_SECRET=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n') ;;
*) echo "--scheme: standard, stripe or lab" >&2; exit 2 ;;
esac
export LOADGEN_SECRET

SEALING=sealed
[[ $VARIANT == plaintext ]] && SEALING=plaintext
bench_config "$WORK/bench.toml" "$PROVIDER" "$LOADGEN_SECRET" "$SEALING"

SERVER=("$BIN/hookinbox" serve)
[[ $VARIANT == baseline ]] && SERVER=("$BIN/baseline")
RUST_LOG="$LOG,async_nats=warn" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$OUT/callgrind.out" \
    "${SERVER[@]}" --config "$WORK/bench.toml" --listen 127.0.0.1:0 \
    >"$WORK/stdout" 2>"$OUT/server.log" &
SERVER_PID=$!
URL=""
for _ in $(seq 600); do
    URL=$(grep -m1 -o 'listening on http://[0-9.:]*' "$WORK/stdout" 2>/dev/null || true)
    [[ -n "$URL" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
done
[[ -n "$URL" ]] || { echo "server did not start; see $OUT/server.log" >&2; exit 1; }
URL="${URL#listening on }/hooks/bench"

callgrind_control --instr=on "$SERVER_PID" >/dev/null
DURATION=$(python3 -c "print($REQUESTS / $RATE)")
"$BIN/loadgen" --url "$URL" --scheme "$SCHEME" --rate "$RATE" --duration "$DURATION" --warmup 0 \
    --timeout 60 --json "$OUT/loadgen.json" >"$OUT/loadgen.txt" 2>&1 \
    || { echo "loadgen failed; see $OUT/loadgen.txt" >&2; exit 1; }
callgrind_control --dump="load" "$SERVER_PID" >/dev/null
callgrind_control --instr=off "$SERVER_PID" >/dev/null
kill -TERM "$SERVER_PID"
wait "$SERVER_PID" || true
SERVER_PID=""

OK=$(python3 -c "import json; print(json.load(open('$OUT/loadgen.json'))['ok'])")
DUMP=$(ls -t "$OUT"/callgrind.out.*1 2>/dev/null | head -1 || true)
[[ -n "$DUMP" ]] || DUMP=$(ls -t "$OUT"/callgrind.out* | grep -v '\.1$' | head -1)
callgrind_annotate --inclusive=yes --threshold=100 "$DUMP" >"$OUT/inclusive.txt" 2>/dev/null
callgrind_annotate --threshold=100 "$DUMP" >"$OUT/self.txt" 2>/dev/null
{
    echo "variant=$VARIANT scheme=$SCHEME log=$LOG requests=$REQUESTS rate=$RATE ok=$OK"
    echo "commit: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- crates || echo ' (dirty)')"
    python3 "$ROOT/bench/profile_stages.py" "$OUT/inclusive.txt" "$OUT/self.txt" "$OK"
} | tee "$OUT/stages.txt"
