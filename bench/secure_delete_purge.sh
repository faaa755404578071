#!/usr/bin/env bash
# bench/secure_delete_purge.sh: focused A/B of SQLite secure_delete through the
# service (RESULTS §0e). Needs a release binary whose open_connection reads
# HOOKINBOX_BENCH_SECURE_DELETE (ON/OFF), a temporary change never committed.
# Times `hookinbox purge` (unpaced) of ROWS old events (dedup: deleted whole),
# on copies of one template made by `preload`, modes alternating by round.
# Usage: ROWS=200000 ROUNDS=3 [TEMPLATE=DIR] bench/secure_delete_purge.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release
ROWS=${ROWS:-200000}
ROUNDS=${ROUNDS:-3}
T=${TEMPLATE:-${TMPDIR:-/tmp}/hookinbox-secure-delete-template}
if [[ ! -f $T/inbox.db ]]; then
  mkdir -p "$T"
  "$BIN/preload" --db "$T/inbox.db" --events "$ROWS" --body-bytes 256 >&2
fi
for round in $(seq 1 "$ROUNDS"); do
  if ((round % 2)); then order="ON OFF"; else order="OFF ON"; fi
  for v in $order; do
    W=$(mktemp -d "${TMPDIR:-/tmp}/hookinbox-secure-delete.XXXXXX")
    cp -r "$T/." "$W/"
    cat > "$W/bench.toml" <<TOML
[storage]
url = "sqlite://$W/inbox.db"
[encryption]
allow_plaintext = true
[[endpoint]]
id = "bench"
provider = "lab"
[[endpoint.secret]]
version = "v1"
value = "0123456789abcdef0123456789abcdef"
[retention]
raw_payload = "1h"
dedup = "1d"
batch = 1000
TOML
    sync
    before=$(awk '{print $1+$2+$3+$4}' <(head -1 /proc/stat | awk '{print $2,$3,$4,$7}'))
    start=$(date +%s.%N)
    HOOKINBOX_BENCH_SECURE_DELETE=$v "$BIN/hookinbox" purge --config "$W/bench.toml" 2>"$W/purge.err"
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc -l)
    load=$(cut -d' ' -f1 /proc/loadavg)
    dbsz=$(stat -c %s "$W/inbox.db"); walsz=$(stat -c %s "$W/inbox.db-wal" 2>/dev/null || echo 0)
    printf "round %s secure_delete=%-3s %7.2f s  %8.0f rows/s  db %s B  wal %s B  load %s  | %s\n" \
      "$round" "$v" "$secs" "$(echo "$ROWS / $secs" | bc -l)" "$dbsz" "$walsz" "$load" "$(tail -1 "$W/purge.err" | tr -d '\r' | sed 's/.*\x1b\[K//')"
    rm -rf "$W"
  done
done
