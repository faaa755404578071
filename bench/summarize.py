#!/usr/bin/env python3
"""Summarises a bench/run.sh output directory (standard library only).

    summarize.py OUT_DIR          markdown tables on stdout, OUT_DIR/summary.json
    summarize.py --check PREFIX   checks one measurement (PREFIX.loadgen.json +
                                  PREFIX.meta.json), prints one line, exits 1
                                  if a 2xx has no committed row

The machine is shared and noisy, so the tables give every round, the median
over rounds, the hookinbox/baseline ratio of the medians, and how much CPU
other processes used meanwhile ("others' CPU", in % of one core).
"""

import json
import statistics
import sys
from pathlib import Path

P99_TARGET_MS = 15.0
SATURATION_TARGET = 10_000.0


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
        for kind in ("hookinbox", "baseline"):
            mine = sorted(
                [(r, m) for r, m in open_runs if m["kind"] == kind], key=lambda x: x[1]["round"]
            )
            for r, m in mine:
                lat = r["latency_us"]
                ok, text = durability(r, m)
                summary["durability_ok"] &= ok
                lines.append(
                    f"| {kind} | {m['round']} | {fmt_ms(ms(lat['p50']))} | {fmt_ms(ms(lat['p90']))} "
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
        lines.append("")

    # Saturation.
    sat_runs = [(r, m) for r, m in runs if m["mode"] == "sat"]
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
    if len(argv) == 2:
        return summarise(Path(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
