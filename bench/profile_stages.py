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
    ("SHA-256 compression (all of it; software under valgrind)", [r"sha256\.rs:sha2::sha256::compress256 \["]),
    ("verify: HMAC (incl. its SHA-256)", [r"signature\.rs:hookinbox_verify::signature::SignatureClaim::is_signed_by$"]),
    ("fingerprint (incl. its SHA-256)", [r"inbox\.rs:hookinbox_store::inbox::Fingerprint::of$"]),
    ("parse: envelope JSON", [r"as hookinbox_verify::adapter::Adapter>::envelope$"]),
    ("seal + prepare (PreparedEvent::new)", [r"prepared_event\.rs:hookinbox_store::prepared_event::PreparedEvent::new$"]),
    # SealBuffer::seal since the in-place seal (#20); seal_under before it.
    ("  of it: AEAD (SealBuffer::seal, or seal_under before #20)",
     [r"sealed\.rs:hookinbox_store::sealed::seal_under \[", r"sealed\.rs:hookinbox_store::sealed::SealBuffer::seal \["]),
    ("writer thread: group commit (SQLite)", [r"group_commit\.rs:hookinbox_store::sqlite::group_commit::run$"]),
    ("  of it: the inserts (accept)", [r"/accept\.rs:hookinbox_store::sqlite::accept::accept$"]),
    ("log line + metrics (IngressOutcome::emit)", [r"/ingress_events\.rs:hookinbox::telemetry::ingress_events::IngressOutcome::emit$"]),
    ("  of it: log line formatting (fmt on_event)", [r"fmt_layer\.rs:<tracing_subscriber::fmt::Subscriber"]),
    ("ingress handler, whole (receive::answer)", [r"receive\.rs:hookinbox::ingress::receive::answer::\{\{closure\}\} \["]),
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
    sha = max([c for c, n in rows if re.search(STAGES[0][1][0], n)] or [0])
    print(f"total: {total / requests:,.0f} instructions per request ({requests} requests); "
          f"without SHA-256 compression: {(total - sha) / requests:,.0f}")
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
