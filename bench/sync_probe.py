#!/usr/bin/env python3
"""bench/sync_probe.py — what the disk alone does with the syncs a commit makes.

Appends BYTES to a file and fdatasyncs it, RATE times a second for SECONDS
(nothing else of ours running), and prints the sync's latency percentiles
and every sync over 20 ms with its time. A durable receiver syncs before it
answers, so a sync the disk holds for 150 ms is a 150 ms wait for every
request that arrives meanwhile: this tells the disk's tail from the
server's (bench/RESULTS.md §16).

With --direct it overwrites a preallocated file with O_DIRECT | O_DSYNC
instead: no page cache and no filesystem metadata, the device alone.

Usage: bench/sync_probe.py [--seconds 30] [--rate 500] [--bytes 20480] [--dir .] [--direct]
"""
import argparse
import mmap
import os
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--bytes", type=int, default=20480)
    parser.add_argument("--dir", default=".")
    parser.add_argument("--direct", action="store_true")
    args = parser.parse_args()
    # Page-aligned, a multiple of 4 KiB: what O_DIRECT needs.
    size = -(-args.bytes // 4096) * 4096 if args.direct else args.bytes
    chunk = mmap.mmap(-1, size)
    chunk.write(os.urandom(size))
    span = 256 << 20  # the preallocated file --direct writes over, in turn
    latencies, slow = [], []
    with tempfile.NamedTemporaryFile(dir=args.dir, prefix="sync_probe-") as file:
        fd = file.fileno()
        if args.direct:
            zeros = bytes(1 << 20)
            for _ in range(span >> 20):
                os.write(fd, zeros)
            os.fsync(fd)
            fd = os.open(file.name, os.O_WRONLY | os.O_DIRECT | os.O_DSYNC)
        offset = 0
        end = time.monotonic() + args.seconds
        due = time.perf_counter()
        while time.monotonic() < end:
            started = time.perf_counter()
            if args.direct:
                os.pwrite(fd, chunk, offset)
                offset = (offset + size) % (span - size)
            else:
                os.write(fd, chunk)
                os.fdatasync(fd)
            took = time.perf_counter() - started
            latencies.append(took)
            if took > 0.020:
                slow.append(f"{time.strftime('%H:%M:%S')} {took * 1000:.1f} ms")
            due += 1 / args.rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
        if args.direct:
            os.close(fd)
    latencies.sort()
    n = len(latencies)

    def at(q):
        return latencies[min(n - 1, int(q * n))] * 1000

    how = "overwritten (O_DIRECT | O_DSYNC)" if args.direct else "appended + fdatasync"
    print(f"{n} writes of {size} B {how}: p50 {at(0.5):.2f}  p99 {at(0.99):.2f}  "
          f"p99.9 {at(0.999):.2f}  max {latencies[-1] * 1000:.1f} ms")
    print(f"over 20 ms: {len(slow)}" + "".join(f"\n  {s}" for s in slow))


if __name__ == "__main__":
    main()
