"""LLM client throughput: N structured calls through the fault proxy with injected latency; prints JSON.

    .venv/bin/python bench/bench_llm_concurrency.py [--calls 200] [--latency 0.1] [--concurrency 8]

The proxy (its own process, so that it does not share the client's interpreter lock) answers every call
itself after `latency` seconds with a canned completion, so the wall time measures the client
(scheduling, HTTP, JSON validation, cache writes), not a model. The ideal wall time
is calls * latency / concurrency; `ratio` is wall / ideal (1.0 = no overhead). Each call has a distinct
prompt and a fresh cache, so every call is a miss that is validated and written to the SQLite cache.
A second pass over the same prompts shows the cost of 200 cache hits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.caches.sqlite_llm import LLMCache  # noqa: E402
from pipeline.engine.summarize import Summary  # noqa: E402
from pipeline.llm import LLMClient  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    proxy = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fault_proxy", "--latency", str(args.latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = proxy.stdout.readline().strip() if proxy.stdout else ""
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(run(args, base_url, Path(tmp)), indent=2))
    finally:
        os.kill(proxy.pid, signal.SIGTERM)
        proxy.wait(timeout=10)


def run(args: argparse.Namespace, base_url: str, tmp: Path) -> dict:
    client = LLMClient(
        model="canned",
        api_key="bench",
        base_url=base_url,
        concurrency=args.concurrency,
        json_mode="json_object",
        cache=LLMCache(tmp / "llm.sqlite"),
    )

    async def call(i: int) -> Summary:
        messages = [{"role": "user", "content": f"Summarize item {i}."}]
        return await client.complete_json(messages, Summary, task="bench", prompt_version="v1")

    started = time.monotonic()
    results = client.run_batch(list(range(args.calls)), call)
    wall = time.monotonic() - started
    failures = sum(not isinstance(r, Summary) for r in results)

    started = time.monotonic()
    client.run_batch(list(range(args.calls)), call)
    cached_wall = time.monotonic() - started

    ideal = args.calls * args.latency / args.concurrency
    return {
        "bench": "llm_concurrency",
        "calls": args.calls,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(wall / ideal, 3),
        "failures": failures,
        "cached_pass_wall_s": round(cached_wall, 3),
        "usage": client.usage.as_metadata(),
    }


if __name__ == "__main__":
    main()
