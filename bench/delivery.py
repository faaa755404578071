#!/usr/bin/env python3
"""Helpers of bench/delivery.sh: wait for deliveries, read the outcome from
hookinbox's SQLite file, and summarise runs into medians.

Everything here reads; nothing writes to the database. The numbers come from
the rows hookinbox itself wrote:
- receive time: inbox.received_at_ms (after the body was read, before
  verification; unix ms);
- delivered time: delivery.delivered_at_ms (when the target's 2xx came back,
  just before the DELIVERED settlement is committed; unix ms);
so receive->delivered covers the accept commit, the wait for a worker, the
lease commit, the read of the event, the HTTP round trip to the sink.

Subcommands (all print JSON on stdout):
  wait        poll the sink's GET /stats, then the DB, until every expected
              delivery is DELIVERED or a timeout passes
  throughput  deliveries/s of a drain run (`hookinbox work` started at --start-ms)
  latency     receive->delivered percentiles of every delivered event
  cpu         busy share of the machine between two /proc/stat snapshots
  threads     CPU seconds of a live hookinbox process by thread: the SQLite
              writer, the checkpointer, the tokio workers (async and blocking)
  summary     medians over the per-run JSON files of an output directory
"""

import argparse
import glob
import json
import os
import sqlite3
import statistics
import sys
import time
import urllib.request


def connect(db):
    conn = sqlite3.connect(db, timeout=10)
    conn.execute("PRAGMA query_only = 1")
    return conn


def sink_stats(url):
    with urllib.request.urlopen(url.rstrip("/") + "/stats", timeout=5) as response:
        return json.load(response)


def delivery_counts(conn):
    rows = conn.execute("SELECT status, count(*) FROM delivery GROUP BY status").fetchall()
    return {status: count for status, count in rows}


def cmd_wait(args):
    """Sink first (cheap to ask), then the DB: the sink sees a delivery
    before hookinbox commits its DELIVERED settlement."""
    deadline = time.monotonic() + args.timeout
    stats = {}
    # No sink (a broker target): straight to the DB.
    while args.sink and time.monotonic() < deadline:
        try:
            stats = sink_stats(args.sink)
        except OSError:
            stats = {}
        if stats.get("distinct_keys", 0) >= args.expect:
            break
        time.sleep(args.interval)
    counts = {}
    conn = connect(args.db)
    while time.monotonic() < deadline:
        counts = delivery_counts(conn)
        if counts.get("DELIVERED", 0) >= args.expect and counts.get("PENDING", 0) == 0 \
                and counts.get("LEASED", 0) == 0:
            break
        time.sleep(args.interval)
    done = counts.get("DELIVERED", 0) >= args.expect
    json.dump({"done": done, "expect": args.expect, "delivery": counts, "sink": stats,
               "at_ms": int(time.time() * 1000)}, sys.stdout)
    print()
    return 0 if done else 1


def cmd_throughput(args):
    conn = connect(args.db)
    total, delivered, first, last, attempts = conn.execute(
        "SELECT count(*), sum(status = 'DELIVERED'), min(delivered_at_ms), max(delivered_at_ms),"
        " sum(attempts) FROM delivery").fetchone()
    delivered = delivered or 0
    result = {"deliveries": total, "delivered": delivered, "attempts": attempts,
              "start_ms": args.start_ms, "first_delivered_ms": first,
              "last_delivered_ms": last}
    if delivered and last:
        wall = (last - args.start_ms) / 1000.0
        span = (last - first) / 1000.0
        result["wall_s"] = round(wall, 3)
        # From `hookinbox work` starting to the last delivery: the headline.
        result["deliveries_per_s"] = round(delivered / wall, 1) if wall > 0 else None
        # First to last delivery: without process start-up and the first lease.
        result["steady_per_s"] = round((delivered - 1) / span, 1) if span > 0 else None
    json.dump(result, sys.stdout)
    print()


def percentile(sorted_values, p):
    """Nearest rank: the smallest value with at least p % of values at or below it."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def cmd_latency(args):
    conn = connect(args.db)
    inbox = conn.execute("SELECT count(*) FROM inbox").fetchone()[0]
    counts = delivery_counts(conn)
    rows = conn.execute(
        "SELECT d.delivered_at_ms - i.received_at_ms FROM delivery d JOIN inbox i ON i.id = d.inbox_id"
        " WHERE d.status = 'DELIVERED' AND d.generation = 0").fetchall()
    values = sorted(r[0] for r in rows)
    undelivered = conn.execute(
        "SELECT count(*) FROM inbox i WHERE NOT EXISTS (SELECT 1 FROM delivery d"
        " WHERE d.inbox_id = i.id AND d.status = 'DELIVERED')").fetchone()[0]
    retried = conn.execute("SELECT count(*) FROM delivery WHERE attempts > 1").fetchone()[0]
    received = conn.execute("SELECT min(received_at_ms), max(received_at_ms) FROM inbox").fetchone()
    result = {
        "inbox": inbox,
        "delivery": counts,
        "undelivered": undelivered,
        "retried": retried,
        "received_span_s": round((received[1] - received[0]) / 1000.0, 3) if inbox else None,
        "count": len(values),
        "mean_ms": round(statistics.fmean(values), 2) if values else None,
        "p50_ms": percentile(values, 50),
        "p90_ms": percentile(values, 90),
        "p99_ms": percentile(values, 99),
        "p999_ms": percentile(values, 99.9),
        "max_ms": values[-1] if values else None,
        "over_100ms": sum(1 for v in values if v > 100),
    }
    json.dump(result, sys.stdout)
    print()


def read_cpu(path):
    with open(path) as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]), idle


def cmd_cpu(args):
    """Busy share of the machine, and how much of it was not ours: the
    cores other work on the shared machine took during the run (our
    processes' CPU seconds are passed in), which explains most slow runs."""
    total0, idle0 = read_cpu(args.before)
    total1, idle1 = read_cpu(args.after)
    total = total1 - total0
    busy = total - (idle1 - idle0)
    hz = os.sysconf("SC_CLK_TCK")
    ours = sum(args.ours or [])
    if args.loadgen_json:
        try:
            with open(args.loadgen_json) as f:
                ours += json.load(f).get("generator_cpu_s") or 0.0
        except (OSError, ValueError):
            pass
    window_s = total / hz / (os.cpu_count() or 1)
    result = {"machine_busy_percent": round(100.0 * busy / total, 1) if total else None,
              "ours_cpu_s": round(ours, 2),
              "others_cores": round((busy / hz - ours) / window_s, 2) if window_s else None}
    json.dump(result, sys.stdout)
    print()


def cmd_threads(args):
    """The writer and the checkpointer are both named `hookinbox-sqlit…`
    (15 characters); the writer is started first, so it has the lower tid."""
    hz = os.sysconf("SC_CLK_TCK")
    sqlite_threads, result = [], {"tokio_s": 0.0, "other_s": 0.0}
    task_dir = f"/proc/{args.pid}/task"
    for tid in sorted(os.listdir(task_dir), key=int):
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        seconds = (int(fields[11]) + int(fields[12])) / hz
        if name.startswith("hookinbox-sqlit"):
            sqlite_threads.append(seconds)
        elif name.startswith("tokio"):
            result["tokio_s"] += seconds
        else:
            result["other_s"] += seconds
    result["writer_s"] = sqlite_threads[0] if sqlite_threads else None
    result["checkpointer_s"] = sum(sqlite_threads[1:]) if len(sqlite_threads) > 1 else None
    json.dump({k: round(v, 2) if v is not None else None for k, v in result.items()}, sys.stdout)
    print()


def load_runs(directory, kind):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, f"{kind}-*", "result.json"))):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=0):
    if value is None:
        return "—"
    if isinstance(value, float) and digits:
        return f"{value:,.{digits}f}"
    return f"{value:,.0f}" if isinstance(value, (int, float)) else str(value)


def cmd_summary(args):
    lines = []
    throughput = load_runs(args.dir, "throughput")
    if throughput:
        lines += ["## Throughput (drain of a pre-loaded outbox)", "",
                  "| variant | concurrency | run | events | deliveries/s (wall) "
                  "| deliveries/s (first→last) | wall s | work CPU s | sink CPU s | machine busy "
                  "| other work (cores) | complete |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for run in throughput:
            t = run.get("throughput", {})
            lines.append(
                f"| {run.get('variant', '')} | {run['concurrency']} | {run['run']} "
                f"| {fmt(t.get('delivered'))} "
                f"| {fmt(t.get('deliveries_per_s'))} | {fmt(t.get('steady_per_s'))} "
                f"| {fmt(t.get('wall_s'), 2)} | {fmt(run.get('work_cpu_s'), 2)} "
                f"| {fmt(run.get('sink_cpu_s'), 2)} | {fmt(run.get('machine_busy_percent'))} % "
                f"| {fmt((run.get('cpu') or {}).get('others_cores'), 2)} "
                f"| {'yes' if run.get('complete') else 'NO'} |")
        lines += ["", "Medians:", "",
                  "| variant | concurrency | runs | deliveries/s (wall) | deliveries/s (first→last) "
                  "| work CPU ms per 1,000 deliveries | of which SQLite writer |",
                  "|---|---|---|---|---|---|---|"]
        for v, c in sorted({(r.get("variant", ""), r["concurrency"]) for r in throughput},
                           key=lambda vc: (vc[1], vc[0])):
            runs = [r for r in throughput
                    if r["concurrency"] == c and r.get("variant", "") == v]
            per_k = [1000.0 * r["work_cpu_s"] * 1000 / r["throughput"]["delivered"]
                     for r in runs if r.get("work_cpu_s") and r["throughput"].get("delivered")]
            writer_k = [1000.0 * (r.get("threads") or {}).get("writer_s") * 1000
                        / r["throughput"]["delivered"]
                        for r in runs if (r.get("threads") or {}).get("writer_s") is not None
                        and r["throughput"].get("delivered")]
            lines.append(
                f"| {v} | {c} | {len(runs)} "
                f"| {fmt(median([r['throughput'].get('deliveries_per_s') for r in runs]))} "
                f"| {fmt(median([r['throughput'].get('steady_per_s') for r in runs]))} "
                f"| {fmt(median(per_k))} | {fmt(median(writer_k))} |")
        lines.append("")
    latency = load_runs(args.dir, "latency")
    if latency:
        lines += ["## Latency (receive → delivered, open loop)", "",
                  "| variant | concurrency | run | rate | inbox | delivered | undelivered | p50 ms "
                  "| p90 ms | p99 ms | p99.9 ms | max ms | ack p99 ms | load errors "
                  "| serve CPU s | machine busy | other work (cores) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for run in latency:
            lat = run.get("latency", {})
            ack = run.get("loadgen", {})
            ack_p99 = ack.get("latency_us", {}).get("p99")
            errors = sum(ack.get("errors", {}).values()) + sum(ack.get("non_2xx", {}).values()) \
                if ack else None
            lines.append(
                f"| {run.get('variant', '')} | {run['concurrency']} | {run['run']} "
                f"| {fmt(run.get('rate'))} "
                f"| {fmt(lat.get('inbox'))} | {fmt(lat.get('count'))} | {fmt(lat.get('undelivered'))} "
                f"| {fmt(lat.get('p50_ms'))} | {fmt(lat.get('p90_ms'))} | {fmt(lat.get('p99_ms'))} "
                f"| {fmt(lat.get('p999_ms'))} | {fmt(lat.get('max_ms'))} "
                f"| {fmt(ack_p99 / 1000.0 if ack_p99 is not None else None, 1)} | {fmt(errors)} "
                f"| {fmt(run.get('serve_cpu_s'), 2)} | {fmt(run.get('machine_busy_percent'))} % "
                f"| {fmt((run.get('cpu') or {}).get('others_cores'), 2)} |")
        lines += ["", "Medians:", "",
                  "| variant | concurrency | runs | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms "
                  "| all delivered | serve CPU µs per event | of which SQLite writer |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for v, c in sorted({(r.get("variant", ""), r["concurrency"]) for r in latency},
                           key=lambda vc: (vc[1], vc[0])):
            selected = [r for r in latency
                        if r["concurrency"] == c and r.get("variant", "") == v]
            runs = [r["latency"] for r in selected if r.get("latency")]
            all_delivered = all(r.get("complete") and r["latency"].get("undelivered") == 0
                                for r in selected if r.get("latency"))
            per_event = [1e6 * r["serve_cpu_s"] / r["latency"]["inbox"] for r in selected
                         if r.get("serve_cpu_s") and (r.get("latency") or {}).get("inbox")]
            writer_event = [1e6 * r["threads"]["writer_s"] / r["latency"]["inbox"]
                            for r in selected
                            if (r.get("threads") or {}).get("writer_s") is not None
                            and (r.get("latency") or {}).get("inbox")]
            lines.append(
                f"| {v} | {c} | {len(runs)} | {fmt(median([r.get('p50_ms') for r in runs]))} "
                f"| {fmt(median([r.get('p90_ms') for r in runs]))} "
                f"| {fmt(median([r.get('p99_ms') for r in runs]))} "
                f"| {fmt(median([r.get('p999_ms') for r in runs]))} "
                f"| {fmt(median([r.get('max_ms') for r in runs]))} "
                f"| {'yes' if all_delivered else 'NO'} | {fmt(median(per_event))} "
                f"| {fmt(median(writer_event))} |")
        lines.append("")
    text = "\n".join(lines)
    print(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("wait")
    p.add_argument("--db", required=True)
    p.add_argument("--sink", required=True)
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--interval", type=float, default=0.05)
    p = sub.add_parser("throughput")
    p.add_argument("--db", required=True)
    p.add_argument("--start-ms", type=int, required=True)
    p = sub.add_parser("latency")
    p.add_argument("--db", required=True)
    p = sub.add_parser("cpu")
    p.add_argument("--before", required=True)
    p.add_argument("--after", required=True)
    p.add_argument("--ours", type=float, action="append",
                   help="CPU seconds of one of our processes in the window (repeatable)")
    p.add_argument("--loadgen-json", help="loadgen's report: its generator_cpu_s is ours too")
    p = sub.add_parser("threads")
    p.add_argument("--pid", type=int, required=True)
    p = sub.add_parser("summary")
    p.add_argument("--dir", required=True)
    args = parser.parse_args()
    handler = {"wait": cmd_wait, "throughput": cmd_throughput, "latency": cmd_latency,
               "cpu": cmd_cpu, "threads": cmd_threads, "summary": cmd_summary}[args.command]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
