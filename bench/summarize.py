#!/usr/bin/env python3
"""Summarises a bench/run.sh output directory (standard library only).

    summarize.py OUT_DIR          markdown tables on stdout, OUT_DIR/summary.json
    summarize.py --check PREFIX   checks one measurement (PREFIX.loadgen.json +
                                  PREFIX.meta.json), prints one line, exits 1
                                  if a 2xx has no committed row
    summarize.py --combine OUT.json PART.json...
                                  one loadgen report from several loadgens run
                                  at once (one per server): counts and rates
                                  summed, each latency percentile the MAX over
                                  the parts (the JSON has no histograms to
                                  merge), the parts kept under "parts"

The machine is shared and noisy, so the tables give every round, the median
over rounds, the hookinbox/baseline ratio of the medians, and how much CPU
other processes used meanwhile ("others' CPU", in % of one core).
"""

import json
import os
import statistics
import sys
from pathlib import Path

P99_TARGET_MS = 15.0
SATURATION_TARGET = 10_000.0
# PostgreSQL (issue 7).
PG_P99_TARGET_MS = 20.0
PG_VS_PGBENCH_TARGET = 1.2
PG_DELIVERIES_TARGET = 3_000.0
KINDS = ("hookinbox", "baseline", "postgres")


def combine(out, parts):
    """Several loadgen reports of one measurement as one (see the docstring)."""
    reports = [json.loads(Path(p).read_text()) for p in parts]
    merged = dict(reports[0])

    def total(key):
        return sum(r.get(key) or 0 for r in reports)

    def counts(key):
        result = {}
        for r in reports:
            for k, v in r[key].items():
                result[k] = result.get(k, 0) + v
        return result

    for key in ("scheduled", "sent", "ok", "duplicates", "warmup_ok", "warmup_not_ok",
                "bytes_sent", "target_rate", "achieved_rate", "ack_rate", "generator_cpu_s",
                "generator_cpu_percent"):
        merged[key] = total(key)
    merged["non_2xx"] = counts("non_2xx")
    merged["errors"] = counts("errors")
    for key in ("latency_us", "send_lag_us"):
        if reports[0].get(key) is None:
            continue
        lat = {k: max(r[key][k] for r in reports) for k in ("p50", "p90", "p99", "p99_9", "max")}
        lat["count"] = sum(r[key]["count"] for r in reports)
        lat["mean"] = sum(r[key]["mean"] * r[key]["count"] for r in reports) / max(1, lat["count"])
        merged[key] = lat
    merged["combined"] = "percentiles: max over parts; counts and rates: sum"
    merged["parts"] = [
        {"url": r["url"], "run_id": r["run_id"], "target_rate": r.get("target_rate"),
         "ok": r["ok"], "scheduled": r.get("scheduled"), "ack_rate": r["ack_rate"],
         "latency_us": r["latency_us"], "non_2xx": r["non_2xx"], "errors": r["errors"]}
        for r in reports
    ]
    Path(out).write_text(json.dumps(merged, indent=1) + "\n")
    return 0


def load(prefix):
    report = json.loads(Path(f"{prefix}.loadgen.json").read_text())
    meta = json.loads(Path(f"{prefix}.meta.json").read_text())
    return report, meta


def acks(report):
    """Every 2xx of the run, warmup included."""
    return report["ok"] + report.get("warmup_ok", 0)


def failures(report):
    return (
        sum(report["non_2xx"].values())
        + sum(report["errors"].values())
        + report.get("warmup_not_ok", 0)
    )


def durability(report, meta):
    """(ok, text): rows must equal the 2xx, or exceed them only by requests
    that got no 2xx (committed, but the answer was lost or late)."""
    rows = meta["db_rows"]
    if rows is None:
        return True, "n/a"
    acked = acks(report)
    if rows == acked:
        return True, f"rows {rows} = 2xx"
    if rows > acked and rows - acked <= failures(report):
        return True, f"rows {rows} = 2xx {acked} + {rows - acked} unanswered"
    return False, f"ROWS {rows} != 2xx {acked}"


def server_cpu(meta):
    total = sum(t["cpu_s"] for t in meta["server_threads"].values())
    # The PostgreSQL server's processes do part of the storing: counted as the server's too.
    total += meta.get("postgres_cpu_s") or 0.0
    return total, 100.0 * total / meta["wall_s"] if meta["wall_s"] else 0.0


def others_cpu(report, meta):
    """% of one core used by processes other than this server and loadgen
    during the measurement: the noise of the shared machine."""
    if "machine_cpu_s" not in meta or not meta["wall_s"]:
        return float("nan")
    other = meta["machine_cpu_s"] - server_cpu(meta)[0] - (report.get("generator_cpu_s") or 0.0)
    return max(0.0, 100.0 * other / meta["wall_s"])


def check(prefix):
    report, meta = load(prefix)
    ok, text = durability(report, meta)
    lat = report["latency_us"]
    cpu_s, cpu_pct = server_cpu(meta)
    errors = failures(report)
    line = (
        f"   {meta['name']}: ok {report['ok']}, failed {errors}, "
        f"{report['ack_rate']:.0f} acks/s, p50 {lat['p50'] / 1e3:.2f} p99 {lat['p99'] / 1e3:.2f} "
        f"p99.9 {lat['p99_9'] / 1e3:.2f} max {lat['max'] / 1e3:.2f} ms, "
        f"server cpu {cpu_pct:.0f} %, others {others_cpu(report, meta):.0f} %, durability: {text}"
    )
    print(line, file=sys.stderr)
    return 0 if ok else 1


def median(values):
    return statistics.median(values) if values else float("nan")


def ms(us):
    return us / 1000.0


def fmt_ms(value):
    return f"{value:.2f}"


def ratio(a, b):
    return f"{a / b:.2f}×" if b else "–"


def summarise(out):
    runs = []
    for meta_path in sorted((out / "runs").glob("*.meta.json")):
        prefix = str(meta_path)[: -len(".meta.json")]
        report, meta = load(prefix)
        runs.append((report, meta))
    facts = (out / "facts.txt").read_text() if (out / "facts.txt").exists() else ""
    lines = ["```", facts.rstrip(), "```", ""]
    summary = {"open_loop": {}, "saturate": {}, "durability_ok": True}

    # Open loop.
    open_runs = [(r, m) for r, m in runs if m["mode"] == "open"]
    if open_runs:
        rate = open_runs[0][0]["target_rate"]
        lines += [
            f"### Open loop at {rate:.0f} req/s (ack latency, ms)",
            "",
            "| target | round | p50 | p90 | p99 | p99.9 | max | 2xx / scheduled | non-2xx + errors "
            "| server CPU | loadgen CPU | others' CPU | durability |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for kind in KINDS:
            mine = sorted(
                [(r, m) for r, m in open_runs if m["kind"] == kind], key=lambda x: x[1]["round"]
            )
            for r, m in mine:
                lat = r["latency_us"]
                ok, text = durability(r, m)
                summary["durability_ok"] &= ok
                label = kind
                if r.get("parts"):
                    label = (f"{kind} ×{len(r['parts'])} (p99 each: "
                             + " / ".join(fmt_ms(ms(x["latency_us"]["p99"])) for x in r["parts"])
                             + ")")
                lines.append(
                    f"| {label} | {m['round']} | {fmt_ms(ms(lat['p50']))} | {fmt_ms(ms(lat['p90']))} "
                    f"| {fmt_ms(ms(lat['p99']))} | {fmt_ms(ms(lat['p99_9']))} | {fmt_ms(ms(lat['max']))} "
                    f"| {r['ok']} / {r['scheduled']} | {failures(r)} | {server_cpu(m)[1]:.0f} % "
                    f"| {r['generator_cpu_percent']:.0f} % | {others_cpu(r, m):.0f} % | {text} |"
                )
            if mine:
                med = {
                    key: median([ms(r["latency_us"][key]) for r, _ in mine])
                    for key in ("p50", "p90", "p99", "p99_9", "max")
                }
                med["server_cpu_percent"] = median([server_cpu(m)[1] for _, m in mine])
                med["others_cpu_percent"] = median([others_cpu(r, m) for r, m in mine])
                med["failed"] = sum(failures(r) for r, _ in mine)
                med["rounds"] = len(mine)
                summary["open_loop"][kind] = med
        lines.append("")
        lines += [
            "| median over rounds | p50 | p90 | p99 | p99.9 | max | server CPU | others' CPU |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for kind, med in summary["open_loop"].items():
            lines.append(
                f"| {kind} ({med['rounds']} rounds) | {fmt_ms(med['p50'])} | {fmt_ms(med['p90'])} "
                f"| {fmt_ms(med['p99'])} | {fmt_ms(med['p99_9'])} | {fmt_ms(med['max'])} "
                f"| {med['server_cpu_percent']:.0f} % | {med['others_cpu_percent']:.0f} % |"
            )
        h, b = summary["open_loop"].get("hookinbox"), summary["open_loop"].get("baseline")
        if h and b:
            lines.append(
                f"| ratio hookinbox / baseline | {ratio(h['p50'], b['p50'])} | {ratio(h['p90'], b['p90'])} "
                f"| {ratio(h['p99'], b['p99'])} | {ratio(h['p99_9'], b['p99_9'])} "
                f"| {ratio(h['max'], b['max'])} | {ratio(h['server_cpu_percent'], b['server_cpu_percent'])} | |"
            )
        pgo = summary["open_loop"].get("postgres")
        if pgo and b:
            lines.append(
                f"| ratio postgres / baseline | {ratio(pgo['p50'], b['p50'])} | {ratio(pgo['p90'], b['p90'])} "
                f"| {ratio(pgo['p99'], b['p99'])} | {ratio(pgo['p99_9'], b['p99_9'])} "
                f"| {ratio(pgo['max'], b['max'])} | {ratio(pgo['server_cpu_percent'], b['server_cpu_percent'])} | |"
            )
        if pgo:
            lines += ["", "postgres rows: two `serve --no-workers` processes on one schema, one loadgen "
                      "each at half the rate; percentiles are the max of the two loadgens'; server CPU "
                      "includes all `postgres` processes."]
        lines.append("")

    # Saturation.
    sat_runs = [(r, m) for r, m in runs if m["mode"] == "sat" and m["kind"] != "postgres"]
    pg_sat_runs = [(r, m) for r, m in runs if m["mode"] == "sat" and m["kind"] == "postgres"]
    if sat_runs:
        concurrencies = sorted({m["concurrency"] for _, m in sat_runs})
        lines += [
            "### Saturation (closed loop): 2xx per second",
            "",
            "| concurrency | hookinbox, each round | hookinbox median | baseline, each round "
            "| baseline median | ratio | hookinbox p50 / p99 ms (closed loop) | hookinbox failed "
            "| others' CPU (median) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in concurrencies:
            row = {}
            for kind in ("hookinbox", "baseline"):
                mine = sorted(
                    [(r, m) for r, m in sat_runs if m["kind"] == kind and m["concurrency"] == c],
                    key=lambda x: x[1]["round"],
                )
                for r, m in mine:
                    summary["durability_ok"] &= durability(r, m)[0]
                row[kind] = mine
            h_rates = [r["ack_rate"] for r, _ in row["hookinbox"]]
            b_rates = [r["ack_rate"] for r, _ in row["baseline"]]
            h_med, b_med = median(h_rates), median(b_rates)
            summary["saturate"][str(c)] = {
                "hookinbox": h_rates,
                "baseline": b_rates,
                "hookinbox_median": h_med,
                "baseline_median": b_med,
                "hookinbox_p50_ms": median([ms(r["latency_us"]["p50"]) for r, _ in row["hookinbox"]]),
                "hookinbox_p99_ms": median([ms(r["latency_us"]["p99"]) for r, _ in row["hookinbox"]]),
                "hookinbox_failed": sum(failures(r) for r, _ in row["hookinbox"]),
                "hookinbox_server_cpu_percent": median(
                    [server_cpu(m)[1] for _, m in row["hookinbox"]]
                ),
                "baseline_server_cpu_percent": median(
                    [server_cpu(m)[1] for _, m in row["baseline"]]
                ),
                "others_cpu_percent": median(
                    [others_cpu(r, m) for r, m in row["hookinbox"] + row["baseline"]]
                ),
            }
            s = summary["saturate"][str(c)]
            lines.append(
                f"| {c} | {', '.join(f'{x:.0f}' for x in h_rates)} | **{h_med:.0f}** "
                f"| {', '.join(f'{x:.0f}' for x in b_rates)} | {b_med:.0f} | {ratio(h_med, b_med)} "
                f"| {s['hookinbox_p50_ms']:.1f} / {s['hookinbox_p99_ms']:.1f} | {s['hookinbox_failed']} "
                f"| {s['others_cpu_percent']:.0f} % |"
            )
        lines.append("")

    # PostgreSQL saturation against the pgbench reference.
    refs = sorted(
        (json.loads(p.read_text()) for p in (out / "runs").glob("*.pgbench.json")),
        key=lambda x: x["round"],
    )
    ref_med = median([x["tps"] for x in refs]) if refs else None
    summary["pgbench"] = {"tps": [x["tps"] for x in refs], "median": ref_med,
                          "clients": refs[0]["clients"] if refs else None,
                          "postgres_cpu_percent": median(
                              [100 * x["postgres_cpu_s"] / x["wall_s"] for x in refs])
                          if refs else None}
    summary["postgres_saturate"] = {}
    if pg_sat_runs or refs:
        lines += [
            "### PostgreSQL saturation (closed loop, one `serve --no-workers`) vs the pgbench reference",
            "",
            "| concurrency | postgres, each round | postgres median | ratio to pgbench median "
            "| p50 / p99 ms (closed loop) | failed | hookinbox + postgres CPU | others' CPU (median) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in sorted({m["concurrency"] for _, m in pg_sat_runs}):
            mine = sorted([(r, m) for r, m in pg_sat_runs if m["concurrency"] == c],
                          key=lambda x: x[1]["round"])
            for r, m in mine:
                summary["durability_ok"] &= durability(r, m)[0]
            rates = [r["ack_rate"] for r, _ in mine]
            med = median(rates)
            entry = {
                "rates": rates, "median": med,
                "ratio_to_pgbench": med / ref_med if ref_med else None,
                "p50_ms": median([ms(r["latency_us"]["p50"]) for r, _ in mine]),
                "p99_ms": median([ms(r["latency_us"]["p99"]) for r, _ in mine]),
                "failed": sum(failures(r) for r, _ in mine),
                "server_cpu_percent": median([server_cpu(m)[1] for _, m in mine]),
                "others_cpu_percent": median([others_cpu(r, m) for r, m in mine]),
            }
            summary["postgres_saturate"][str(c)] = entry
            lines.append(
                f"| {c} | {', '.join(f'{x:.0f}' for x in rates)} | **{med:.0f}** "
                f"| {ratio(med, ref_med) if ref_med else '–'} | {entry['p50_ms']:.1f} / {entry['p99_ms']:.1f} "
                f"| {entry['failed']} | {entry['server_cpu_percent']:.0f} % | {entry['others_cpu_percent']:.0f} % |"
            )
        if refs:
            lines += [
                "",
                f"| pgbench reference ({refs[0]['clients']} clients, one ~10 KiB row per transaction) "
                "| each round (tps) | median | avg latency ms | failed | postgres CPU |",
                "|---|---|---|---|---|---|",
                "| | " + ", ".join(f"{x['tps']:.0f}" for x in refs) + f" | **{ref_med:.0f}** "
                f"| {median([x['latency_ms'] for x in refs]):.1f} | {sum(x['failed'] for x in refs):.0f} "
                f"| {summary['pgbench']['postgres_cpu_percent']:.0f} % |",
            ]
        lines.append("")

    # PostgreSQL delivery drain.
    drains = sorted(
        (json.loads(p.read_text()) for p in (out / "runs").glob("*.delivery.json")),
        key=lambda x: x["round"],
    )
    if drains:
        lines += [
            "### PostgreSQL delivery drain (two `hookinbox work` processes)",
            "",
            "| round | delivered / pending | deliveries/s (wall) | deliveries/s (first→last) | wall s "
            "| attempts | work CPU s | postgres CPU s | machine busy | complete |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for d in drains:
            window = d.get("window_s") or d["wall_s"]
            busy = 100 * d["machine_cpu_s"] / ((os.cpu_count() or 1) * window) if window else float("nan")
            lines.append(
                f"| {d['round']} | {d['delivered']} / {d['pending']} | {d['deliveries_per_s']:.0f} "
                f"| {d['steady_per_s'] or float('nan'):.0f} | {d['wall_s']:.2f} | {d['attempts']} "
                f"| {d['work_cpu_s']:.2f} | {d['postgres_cpu_s']:.2f} | {busy:.0f} % "
                f"| {'yes' if d['complete'] else 'NO'} |"
            )
        summary["postgres_delivery"] = {
            "rates": [d["deliveries_per_s"] for d in drains],
            "median": median([d["deliveries_per_s"] or 0.0 for d in drains]),
            "complete": all(d["complete"] for d in drains),
        }
        lines += ["", f"median: **{summary['postgres_delivery']['median']:.0f} deliveries/s**", ""]

    # Targets.
    h_open = summary["open_loop"].get("hookinbox")
    best = max(
        (s["hookinbox_median"], c) for c, s in summary["saturate"].items()
    ) if summary["saturate"] else None
    lines.append("### Targets")
    lines.append("")
    if h_open:
        met = h_open["p99"] <= P99_TARGET_MS and h_open["failed"] == 0
        summary["p99_target_met"] = met
        lines.append(
            f"- p99 ack at {open_runs[0][0]['target_rate']:.0f} req/s ≤ {P99_TARGET_MS:.0f} ms: "
            f"median p99 {h_open['p99']:.2f} ms, {h_open['failed']} failed requests → "
            f"**{'met' if met else 'NOT met'}**"
        )
    if best:
        met = best[0] >= SATURATION_TARGET
        summary["saturation_target_met"] = met
        summary["saturation_best"] = {"acks_per_s": best[0], "concurrency": int(best[1])}
        lines.append(
            f"- ≥ {SATURATION_TARGET:,.0f} durable acks/s at saturation: best median "
            f"{best[0]:,.0f} acks/s (concurrency {best[1]}) → **{'met' if met else 'NOT met'}**"
        )
    pgo = summary["open_loop"].get("postgres")
    if pgo:
        met = pgo["p99"] <= PG_P99_TARGET_MS and pgo["failed"] == 0
        summary["postgres_p99_target_met"] = met
        lines.append(
            f"- PostgreSQL, two ingress processes, p99 ack at {open_runs[0][0]['target_rate']:.0f} req/s "
            f"≤ {PG_P99_TARGET_MS:.0f} ms: median of the per-round max p99 {pgo['p99']:.2f} ms, "
            f"{pgo['failed']} failed requests → **{'met' if met else 'NOT met'}**"
        )
    if summary["postgres_saturate"] and ref_med:
        best_pg = max((v["median"], c) for c, v in summary["postgres_saturate"].items())
        met = best_pg[0] >= PG_VS_PGBENCH_TARGET * ref_med
        summary["postgres_saturation_target_met"] = met
        lines.append(
            f"- PostgreSQL durable acks/s at saturation ≥ {PG_VS_PGBENCH_TARGET}× the pgbench reference "
            f"({ref_med:,.0f} tps): best median {best_pg[0]:,.0f} acks/s (concurrency {best_pg[1]}), "
            f"{best_pg[0] / ref_med:.2f}× → **{'met' if met else 'NOT met'}**"
        )
    if summary.get("postgres_delivery"):
        d = summary["postgres_delivery"]
        met = d["median"] >= PG_DELIVERIES_TARGET and d["complete"]
        summary["postgres_delivery_target_met"] = met
        lines.append(
            f"- PostgreSQL deliveries/s ≥ {PG_DELIVERIES_TARGET:,.0f} with two work processes: median "
            f"{d['median']:,.0f} → **{'met' if met else 'NOT met'}**"
        )
    lines.append(
        f"- every hookinbox 2xx has its committed row: "
        f"**{'yes' if summary['durability_ok'] else 'NO'}**"
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))
    return 0 if summary["durability_ok"] else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "--check":
        return check(argv[2])
    if len(argv) >= 4 and argv[1] == "--combine":
        return combine(argv[2], argv[3:])
    if len(argv) == 2:
        return summarise(Path(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
