#!/usr/bin/env python3
"""A JetStream stream for bench/delivery.sh's TARGET=nats (results: RESULTS.md §11):
declare (a file stream taking SUBJECT.>), count (its messages) and delete,
over the plain NATS protocol and the JetStream API subjects ($JS.API.STREAM.*),
so the benchmark needs neither the `nats` CLI nor a client package.

    nats_stream.py --url nats://127.0.0.1:4222 --stream NAME declare|count|delete
"""
import argparse
import json
import socket
import sys
import urllib.parse


def request(url, subject, payload):
    """One JetStream API request: its JSON reply."""
    parsed = urllib.parse.urlparse(url)
    sock = socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 4222), timeout=10)
    reader = sock.makefile("rb")
    reader.readline()  # INFO
    inbox = "_INBOX.bench"
    body = json.dumps(payload).encode()
    sock.sendall(
        b'CONNECT {"verbose":false,"pedantic":false}\r\n'
        + f"SUB {inbox} 1\r\n".encode()
        + f"PUB {subject} {inbox} {len(body)}\r\n".encode()
        + body
        + b"\r\n"
    )
    while True:
        line = reader.readline()
        if not line:
            sys.exit("nats: connection closed before the reply")
        if line.startswith(b"PING"):
            sock.sendall(b"PONG\r\n")
        elif line.startswith(b"-ERR"):
            sys.exit(f"nats: {line.decode().strip()}")
        elif line.startswith(b"MSG"):
            size = int(line.split()[-1])
            reply = reader.read(size + 2)[:size]
            sock.close()
            return json.loads(reply)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="nats://127.0.0.1:4222")
    parser.add_argument("--stream", required=True)
    parser.add_argument("action", choices=["declare", "count", "delete"])
    args = parser.parse_args()
    if args.action == "declare":
        config = {
            "name": args.stream,
            "subjects": [f"{args.stream}.>"],
            "storage": "file",
            "retention": "limits",
            "duplicate_window": 120_000_000_000,
        }
        reply = request(args.url, f"$JS.API.STREAM.CREATE.{args.stream}", config)
    elif args.action == "count":
        reply = request(args.url, f"$JS.API.STREAM.INFO.{args.stream}", {})
        if "error" not in reply:
            print(reply["state"]["messages"])
            return
    else:
        reply = request(args.url, f"$JS.API.STREAM.DELETE.{args.stream}", {})
    if "error" in reply:
        sys.exit(f"nats: {reply['error']}")


if __name__ == "__main__":
    main()
