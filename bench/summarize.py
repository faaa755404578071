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

# Issue 20, the default configuration (sealed, info logs) on SQLite.
P99_VS_BASELINE_TARGET = 2.0
SATURATION_TARGET = 20_000.0
SATURATION_CONCURRENCIES = (64, 256)
CPU_TARGET_PERCENT = 35.0
SEALING_COST_TARGET = 0.05  # hookinbox vs plaintext
LOG_COST_TARGET = 0.03  # hookinbox vs warn
# PostgreSQL (issue 7).
PG_P99_TARGET_MS = 20.0
PG_VS_PGBENCH_TARGET = 1.2
PG_DELIVERIES_TARGET = 3_000.0
# hookinbox: the default configuration; plaintext and warn: its ablations.
KINDS = ("hookinbox", "plaintext", "warn", "eager", "targets", "filtered", "otlp_down", "baseline", "postgres")
SQLITE_KINDS = ("hookinbox", "plaintext", "warn", "eager", "targets", "filtered", "otlp_down")


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
        b = summary["open_loop"].get("baseline")
        for kind in SQLITE_KINDS:
            h = summary["open_loop"].get(kind)
            if h and b:
                lines.append(
                    f"| ratio {kind} / baseline | {ratio(h['p50'], b['p50'])} | {ratio(h['p90'], b['p90'])} "
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
            "| concurrency | target | each round | median | ratio to baseline "
            "| p50 / p99 ms (closed loop) | failed | server CPU | others' CPU (median) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for c in concurrencies:
            entry = {}
            for kind in SQLITE_KINDS + ("baseline",):
                mine = sorted(
                    [(r, m) for r, m in sat_runs if m["kind"] == kind and m["concurrency"] == c],
                    key=lambda x: x[1]["round"],
                )
                if not mine:
                    continue
                for r, m in mine:
                    summary["durability_ok"] &= durability(r, m)[0]
                rates = [r["ack_rate"] for r, _ in mine]
                entry[kind] = {
                    "rates": rates,
                    "median": median(rates),
                    "p50_ms": median([ms(r["latency_us"]["p50"]) for r, _ in mine]),
                    "p99_ms": median([ms(r["latency_us"]["p99"]) for r, _ in mine]),
                    "failed": sum(failures(r) for r, _ in mine),
                    "server_cpu_percent": median([server_cpu(m)[1] for _, m in mine]),
                    "others_cpu_percent": median([others_cpu(r, m) for r, m in mine]),
                }
            summary["saturate"][str(c)] = entry
            base = entry.get("baseline", {}).get("median")
            for kind, e in entry.items():
                lines.append(
                    f"| {c} | {kind} | {', '.join(f'{x:.0f}' for x in e['rates'])} | **{e['median']:.0f}** "
                    f"| {ratio(e['median'], base) if base and kind != 'baseline' else ''} "
                    f"| {e['p50_ms']:.1f} / {e['p99_ms']:.1f} | {e['failed']} "
                    f"| {e['server_cpu_percent']:.0f} % | {e['others_cpu_percent']:.0f} % |"
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

    # Targets (issue 20).
    lines.append("### Targets (issue 20: the default configuration, SQLite)")
    lines.append("")
    lines.append("| target | measured (medians over rounds) | met? |")
    lines.append("|---|---|---|")
    targets = {}

    def row(name, text, met):
        targets[name] = met
        lines.append(f"| {name} | {text} | **{'yes' if met else 'NO'}** |")

    rate = open_runs[0][0]["target_rate"] if open_runs else None
    b_rounds = {m["round"]: r for r, m in open_runs if m["kind"] == "baseline"}
    h_rounds = {m["round"]: r for r, m in open_runs if m["kind"] == "hookinbox"}
    if h_rounds and b_rounds:
        ratios = [ms(h_rounds[k]["latency_us"]["p99"]) / ms(b_rounds[k]["latency_us"]["p99"])
                  for k in sorted(h_rounds) if k in b_rounds]
        h_open = summary["open_loop"]["hookinbox"]
        row(f"p99 ack at {rate:.0f} req/s ≤ {P99_VS_BASELINE_TARGET:.0f}× the no-storage baseline, every round",
            f"{h_open['p99']:.2f} ms vs {summary['open_loop']['baseline']['p99']:.2f} ms; per round "
            + ", ".join(f"{x:.2f}×" for x in ratios) + f"; {h_open['failed']} failed",
            bool(ratios) and max(ratios) <= P99_VS_BASELINE_TARGET and h_open["failed"] == 0)
    for c in SATURATION_CONCURRENCIES:
        e = summary["saturate"].get(str(c), {}).get("hookinbox")
        if e:
            row(f"≥ {SATURATION_TARGET:,.0f} durable acks/s at c{c}",
                f"{e['median']:,.0f} acks/s (rounds " + ", ".join(f"{x:.0f}" for x in e["rates"]) + ")",
                e["median"] >= SATURATION_TARGET and e["failed"] == 0)
    h_open = summary["open_loop"].get("hookinbox")
    if h_open:
        row(f"server CPU at {rate:.0f} req/s ≤ {CPU_TARGET_PERCENT:.0f} % of a core",
            f"{h_open['server_cpu_percent']:.0f} %", h_open["server_cpu_percent"] <= CPU_TARGET_PERCENT)
    for ablation, limit, what in (("plaintext", SEALING_COST_TARGET, "sealing"),
                                  ("warn", LOG_COST_TARGET, "the per-event log line")):
        a_open = summary["open_loop"].get(ablation)
        if h_open and a_open:
            cost = h_open["p99"] / a_open["p99"] - 1
            row(f"{what} costs ≤ {limit:.0%} of p99 at {rate:.0f} req/s (hookinbox vs {ablation})",
                f"{h_open['p99']:.2f} vs {a_open['p99']:.2f} ms: {cost:+.1%}", cost <= limit)
        for c, entry in sorted(summary["saturate"].items(), key=lambda x: int(x[0])):
            if "hookinbox" in entry and ablation in entry:
                cost = 1 - entry["hookinbox"]["median"] / entry[ablation]["median"]
                row(f"{what} costs ≤ {limit:.0%} of saturation throughput at c{c}",
                    f"{entry['hookinbox']['median']:,.0f} vs {entry[ablation]['median']:,.0f} acks/s: "
                    f"{cost:+.1%}", cost <= limit)
    summary["targets"] = targets
    lines.append("")
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
