#!/usr/bin/env bash
# bench/writer_syscalls.sh — issue 20: what the SQLite writer thread asks of
# the kernel under RATE req/s on the default configuration (RESULTS §19).
# Starts one server like bench/sustained.sh, runs `loadgen --rate RATE` for
# SECONDS + 10 s and, after 5 s, traces the `sqlite-writer` thread for
# SECONDS with `perf trace` (root): its sleeps in SQLite's busy handler
# (`clock_nanosleep`) and its writes and syncs, per file: the WAL (two
# `pwrite64` per frame: header, then page), the payload segments (`writev`).
# Tracing slows the writer: read the counts, not the latencies.
#
# Usage: bench/writer_syscalls.sh RATE [SECONDS]   (release binaries in BIN, default target/release)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
RATE=${1:?usage: bench/writer_syscalls.sh RATE [SECONDS]}
SECONDS_TRACED=${2:-40}
BIN=${BIN:-$PWD/target/release}
SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')"
WORK=$(mktemp -d)
trap 'kill -TERM "${spid:-}" "${lpid:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
bench_config "$WORK/bench.toml" standard "$SECRET"
bench_serve "$BIN" "$WORK"
tid=$(grep -l '^sqlite-writer$' /proc/"$spid"/task/*/comm | head -1 | cut -d/ -f5)
nice -n -10 "$BIN/loadgen" --url "$URL/hooks/bench" --secret "$SECRET" --scheme standard \
    --rate "$RATE" --duration $((SECONDS_TRACED + 10)) --warmup 0 --max-inflight 8192 \
    --seed 1 --run-id writer-syscalls --json "$WORK/loadgen.json" >"$WORK/loadgen.txt" 2>&1 &
lpid=$!
sleep 5
perf trace -e pwrite64,writev,fdatasync,clock_nanosleep -t "$tid" -o "$WORK/trace" \
    -- sleep "$SECONDS_TRACED" >/dev/null 2>&1
ls -l /proc/"$spid"/fd | awk 'NF >= 11 {print $9, $11}' >"$WORK/fds"
wait "$lpid"
python3 - "$WORK/trace" "$WORK/fds" "$WORK/loadgen.json" "$RATE" "$SECONDS_TRACED" <<'PY'
import collections, json, re, sys
trace, fds_file, loadgen, rate, seconds = sys.argv[1:]
fds = dict(line.split() for line in open(fds_file))
def kind(fd):
    name = fds.get(fd, "a segment closed since")  # rolled segments are closed by the end
    return re.sub(r"\d+", "N", name.rsplit("/", 1)[-1])
calls = collections.Counter(); nbytes = collections.Counter(); sleeps = []
for line in open(trace):
    m = re.search(r"\(\s*([\d.]+) ms\): (\w+)\((?:fd: (\d+))?(?:.*?count: (\d+))?", line)
    if not m:
        continue
    ms, call, fd, count = m.groups()
    if call == "clock_nanosleep":
        sleeps.append(float(ms)); continue
    calls[(kind(fd), call)] += 1; nbytes[(kind(fd), call)] += int(count or 0)
events = int(rate) * int(seconds)
print(f"sqlite-writer, {seconds} s at {rate} req/s (~{events} events):")
print(f"  busy-handler sleeps: {len(sleeps)}, {sum(sleeps):.0f} ms asleep")
for (file, call), n in sorted(calls.items()):
    size = f", mean {nbytes[(file, call)] / n:.0f} B" if nbytes[(file, call)] else ""
    print(f"  {file}: {call} {n} ({n / events:.2f} per event{size})")
j = json.load(open(loadgen))
print(f"loadgen: {j['ok']} 2xx of {j['ok'] + sum(j['non_2xx'].values()) + sum(j['errors'].values())}")
PY
