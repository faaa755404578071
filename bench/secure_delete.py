#!/usr/bin/env python3
"""bench/secure_delete.py: what SQLite's `secure_delete = ON` costs hookinbox's
write pattern (issue 18, "purge means gone"), against `OFF`, on the real schema.

A focused measurement of the database alone (no HTTP, no payload log): on a copy
of an empty database migrated by `hookinbox migrate`, with the writer's pragmas
(WAL, synchronous=FULL, temp_store=MEMORY, wal_autocheckpoint=8192), it

  1. inserts --rows inbox rows as the group commit does (--commit rows per
     COMMIT, each fsynced), each with ~300 B of audit headers holding a marker;
  2. purges their bodies and audit headers (`raw_payload`: the UPDATE that
     purge.rs runs), 1,000 rows per COMMIT;
  3. deletes the rows whole (`dedup`), 1,000 per COMMIT;
  4. checkpoints the WAL with TRUNCATE, as a purge now ends,

and reports rows/s for each phase, the checkpoint's time, and how many copies
of the marker are left in the database file after step 2's checkpoint. Modes
alternate between rounds. The SQLite is the one Python links (its version is
printed); hookinbox bundles its own, so the ratio is the result, not the
absolute rates.

Usage: bench/secure_delete.py --db EMPTY.db [--rows N] [--rounds N] [--commit N]
"""

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time

MARKER = b"SECURE-DELETE-MARKER-7e1d"


def connect(path, mode):
    conn = sqlite3.connect(path, isolation_level=None)
    for pragma in (
        "journal_mode = WAL",
        "synchronous = FULL",
        "foreign_keys = ON",
        f"secure_delete = {mode}",
        "wal_autocheckpoint = 8192",
        "temp_store = MEMORY",
    ):
        conn.execute(f"PRAGMA {pragma}")
    return conn


def in_commits(conn, items, per_commit, apply):
    started = time.perf_counter()
    for start in range(0, len(items), per_commit):
        conn.execute("BEGIN IMMEDIATE")
        for item in items[start : start + per_commit]:
            apply(item)
        conn.execute("COMMIT")
    return len(items) / (time.perf_counter() - started)


def marker_copies(path):
    with open(path, "rb") as f:
        return f.read().count(MARKER)


def one_run(template, mode, rows, per_commit):
    work = tempfile.mkdtemp(prefix="hookinbox-secure-delete.")
    try:
        db = os.path.join(work, "inbox.db")
        shutil.copy(template, db)
        conn = connect(db, mode)
        headers = json.dumps(
            [
                ["content-type", "application/json"],
                ["user-agent", "Provider-Webhooks/2.1 " + MARKER.decode()],
                ["x-timestamp", "1764633600"],
                ["x-signature", "ab" * 32],
                ["x-request-id", "req_" + "0" * 60],
            ]
        )
        ids = [f"0190a1b2-{n:012d}" for n in range(rows)]

        def insert(n_id):
            n = int(n_id.rsplit("-", 1)[1])
            conn.execute(
                """INSERT INTO inbox (id, endpoint_id, provider, provider_event_id, event_type,
                       received_at_ms, content_type, payload_sha256, audit_headers,
                       matched_secret_version, status, payload_segment, payload_offset, payload_len)
                   VALUES (?1, 'bench', 'lab', ?2, 'bench.old', ?3, 'application/json', ?4, ?5,
                           'v1', 'PROCESSED', 1, ?6, 256)""",
                (n_id, f"ev-{n}", 1_000_000 + n, os.urandom(32), headers, n * 256),
            )

        def purge_body(n_id):
            conn.execute(
                """UPDATE inbox SET payload_segment = NULL, payload_offset = NULL,
                       payload_len = NULL, payload_key_id = NULL, audit_headers = '[]'
                   WHERE id = ?1""",
                (n_id,),
            )

        def delete_row(n_id):
            conn.execute("DELETE FROM inbox WHERE id = ?1", (n_id,))

        insert_rate = in_commits(conn, ids, per_commit, insert)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        raw_rate = in_commits(conn, ids, 1000, purge_body)
        started = time.perf_counter()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        truncate_ms = (time.perf_counter() - started) * 1000
        left = marker_copies(db) + marker_copies(db + "-wal")
        delete_rate = in_commits(conn, ids, 1000, delete_row)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return {
            "insert_rows_s": insert_rate,
            "raw_purge_rows_s": raw_rate,
            "delete_rows_s": delete_rate,
            "truncate_ms": truncate_ms,
            "markers_left": left,
        }
    finally:
        shutil.rmtree(work)


def cpu_busy():
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[0] + fields[1] + fields[2], sum(fields)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="an empty database from `hookinbox migrate`")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commit", type=int, default=512, help="rows per COMMIT when inserting")
    args = parser.parse_args()
    print(f"SQLite {sqlite3.sqlite_version}, {args.rows} rows, {args.commit} per insert COMMIT")
    print("| round | secure_delete | insert rows/s | raw purge rows/s | delete rows/s "
          "| TRUNCATE after raw purge (ms) | markers left | machine CPU busy |")
    print("|---|---|---|---|---|---|---|---|")
    for round_ in range(1, args.rounds + 1):
        modes = ["ON", "OFF"] if round_ % 2 else ["OFF", "ON"]
        for mode in modes:
            busy0, total0 = cpu_busy()
            r = one_run(args.db, mode, args.rows, args.commit)
            busy1, total1 = cpu_busy()
            busy = 100 * (busy1 - busy0) / max(1, total1 - total0)
            print(
                f"| {round_} | {mode} | {r['insert_rows_s']:,.0f} | {r['raw_purge_rows_s']:,.0f} "
                f"| {r['delete_rows_s']:,.0f} | {r['truncate_ms']:.1f} | {r['markers_left']} "
                f"| {busy:.0f} % |",
                flush=True,
            )


if __name__ == "__main__":
    main()
