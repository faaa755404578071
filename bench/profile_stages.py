#!/usr/bin/env python3
"""Instructions per request by pipeline stage, from callgrind_annotate output.

Usage: profile_stages.py INCLUSIVE.txt SELF.txt REQUESTS

Each stage is the inclusive count of the functions that stand for it (the
largest one matched, since they nest); the rest of the total is HTTP and the
runtime (hyper, tokio, axum, the kernel interface). Counts are divided by
REQUESTS. Functions inlined into their callers are counted in the caller:
the patterns name the outermost function of a stage that survives inlining
in the `profiling` build.
"""
import re
import sys

# (stage, [patterns]) — a pattern matches the demangled function name.
STAGES = [
    ("body read", [r"ingress::body::RequestBody::read"]),
    ("verify (HMAC + claim)", [r"hookinbox_verify::verifier::Verifier::verify_signature",
                               r"hookinbox_verify::signature::.*verify"]),
    ("parse (envelope JSON)", [r"as hookinbox_verify::adapter::Adapter>::envelope",
                               r"hookinbox_verify::envelope::json"]),
    ("fingerprint (SHA-256)", [r"hookinbox_store::inbox::Fingerprint::of"]),
    ("seal (AEAD) + prepare", [r"hookinbox_store::prepared_event::PreparedEvent::new"]),
    ("commit (SQLite, writer thread)", [r"hookinbox_store::sqlite::group_commit::commit"]),
    ("  of it: payload write + fdatasync", [r"PayloadLog::flush"]),
    ("  of it: COMMIT", [r"rusqlite::transaction::Transaction::commit"]),
    ("response (JSON)", [r"Acceptance as axum_core::response::into_response::IntoResponse"]),
    ("log line (tracing fmt + write)", [r"tracing_subscriber::fmt::fmt_layer::Layer.*on_event"]),
    ("metrics", [r"metrics_exporter_prometheus::recorder::.*register_(counter|histogram)",
                 r"metrics_exporter_prometheus::registry"]),
]

LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$")


def read(path):
    rows = []
    total = None
    for line in open(path, errors="replace"):
        if total is None:
            m = re.match(r"^\s*([\d,]+)\s+\(100\.0+%\)\s+PROGRAM TOTALS", line)
            if m:
                total = int(m.group(1).replace(",", ""))
                continue
        m = LINE.match(line)
        if m:
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return total, rows


def main():
    inclusive, _self, requests = sys.argv[1], sys.argv[2], int(sys.argv[3])
    total, rows = read(inclusive)
    if not total or requests <= 0:
        sys.exit("no totals")
    print(f"total: {total / requests:,.0f} instructions per request ({requests} requests)")
    print("| stage | instructions / request | share |")
    print("|---|---|---|")
    for stage, patterns in STAGES:
        best = 0
        for count, name in rows:
            if any(re.search(p, name) for p in patterns):
                best = max(best, count)
        print(f"| {stage} | {best / requests:,.0f} | {100 * best / total:.1f} % |")


if __name__ == "__main__":
    main()
