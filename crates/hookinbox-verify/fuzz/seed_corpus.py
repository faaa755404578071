"""Writes corpus/adapters/: one seed per request vector, in the input format
of fuzz_targets/adapters.rs, from the signed vectors and the crate's fixtures.

    python3 seed_corpus.py [more.jsonl …]
"""

import base64
import hashlib
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
SOURCES = [
    HERE / "../tests/vectors/signatures.jsonl",
    HERE / "../tests/fixtures/documented/asym_providers.jsonl",
    # The SDK and documented-formula fixtures: every provider's header shapes.
    *sorted((HERE / "../tests/fixtures").glob("*.jsonl")),
    *map(pathlib.Path, sys.argv[1:]),
]
OUT = HERE / "corpus" / "adapters"
OUT.mkdir(parents=True, exist_ok=True)

count = 0
for source in SOURCES:
    if not source.exists():
        print(f"skipping {source}: not found")
        continue
    for line in source.read_text().splitlines():
        if not line.strip():
            continue
        vector = json.loads(line)
        request = vector["request"]
        head = [vector["endpoint"]["provider"], str(vector["now"])]
        head += [f"{name}: {value}" for name, value in request["headers"]]
        if request.get("query") is not None:
            head.append(f"?: {request['query']}")
        seed = "\n".join(head).encode() + b"\n\n" + base64.b64decode(request["body_b64"])
        (OUT / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        count += 1
print(f"wrote {count} seeds to {OUT}")
