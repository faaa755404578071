#!/usr/bin/env bash
# bench/wal_frames.sh — issue 20: which b-trees each SQLite commit writes
# to the WAL, per commit, on the default configuration (RESULTS §20).
# Starts one server like bench/writer_syscalls.sh, sends RATE req/s for
# SECONDS, then kills it with SIGKILL so that nothing checkpoints or
# restarts the WAL, copies the database and its WAL, walks the WAL's valid
# frames (those carrying the header's salts, up to the last commit frame)
# and names each frame's page by SQLite's `dbstat` table. Prints the
# frames per commit, and per commit by b-tree and page kind (leaf,
# internal), over the last 300 commits.
#
# Usage: bench/wal_frames.sh RATE [SECONDS]   (release binaries in BIN, default target/release;
#        needs the sqlite3 shell, built with dbstat as Debian's is)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
RATE=${1:?usage: bench/wal_frames.sh RATE [SECONDS]}
SECONDS_SENT=${2:-20}
BIN=${BIN:-$PWD/target/release}
SECRET="whsec_$(head -c 24 /dev/urandom | base64 | tr -d '\n')"
WORK=$(mktemp -d)
trap 'kill -KILL "${spid:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
bench_config "$WORK/bench.toml" standard "$SECRET"
bench_serve "$BIN" "$WORK"
timeout $((SECONDS_SENT + 60)) "$BIN/loadgen" --url "$URL/hooks/bench" --secret "$SECRET" --scheme standard \
    --rate "$RATE" --duration "$SECONDS_SENT" --warmup 0 --run-id wal-frames \
    --json "$WORK/loadgen.json" >"$WORK/loadgen.txt" 2>&1
kill -KILL "$spid"
wait "$spid" 2>/dev/null || true
mkdir "$WORK/copy"
cp "$WORK/inbox.db" "$WORK/inbox.db-wal" "$WORK/copy/"
sqlite3 "$WORK/copy/inbox.db" "SELECT pageno, name, pagetype FROM dbstat" >"$WORK/pages"
python3 - "$WORK/inbox.db-wal" "$WORK/pages" "$WORK/loadgen.json" "$RATE" <<'PY'
import collections, json, struct, sys
wal, pages, loadgen, rate = sys.argv[1:]
data = open(wal, "rb").read()
_magic, _version, page_size, _seq, salt1, salt2, _c1, _c2 = struct.unpack(">8I", data[:32])
commits, frames, offset = [], [], 32
while offset + 24 + page_size <= len(data):
    page, db_size, f_salt1, f_salt2, _k1, _k2 = struct.unpack(">6I", data[offset:offset + 24])
    if (f_salt1, f_salt2) != (salt1, salt2):
        break
    frames.append(page)
    if db_size:  # a commit frame: the database's size after the commit
        commits.append(frames)
        frames = []
    offset += 24 + page_size
commits = commits[-300:]
owner = {}
for line in open(pages):
    number, name, kind = line.rstrip("\n").split("|")
    owner[int(number)] = (name, kind)
count = collections.Counter(owner.get(p, ("?", "?")) for c in commits for p in c)
total = sum(len(c) for c in commits)
report = json.load(open(loadgen))
print(f"{rate} req/s: {report['ok']} 2xx of {report['sent']}; the WAL's last {len(commits)} commits")
print(f"  frames per commit: {total / max(len(commits), 1):.1f}")
for (name, kind), n in count.most_common():
    print(f"  {n / len(commits):5.2f}  {name} ({kind})")
PY
