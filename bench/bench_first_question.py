"""The first question after start-up, and the first event under concurrent local streams; prints JSON.

    .venv/bin/python bench/bench_first_question.py [--storage DIR] [--processes 5] [--concurrency 8]
        [--requests 10] [--graph-workers 1,8] [--skip-first] [--log]

Offline, on the demo index (samples/demo, A Christmas Carol) built into a temporary folder, or `--storage
DIR` holding namespace `demo` (`make demo`'s storage). The server is the real one (`graphrag-serve`, the
offline engine) started as a subprocess with one tenant key per client.

1. First question: for each of basic, local, global and DRIFT, `--processes` fresh service processes;
   each is started, waited for until `/readyz` answers 200 (the models are loaded), then asked one
   streamed question at once. Measured from just before the request: its first event and its `done`, in
   ms. What the service warms after start-up (`pipeline.service.warm`) runs in the background, so the
   question may arrive while it is still loading; the question then waits for that load rather than
   starting its own. Target: `done` p50 within 2 s for every mode.
2. First event under load: one fresh process, warmed by one question per mode, then `--concurrency`
   clients each asking `--requests` streamed local questions one after another
   (`bench_stream.clients`). Target: first event p50 within 150 ms. It runs once per
   `PIPELINE_SERVICE_GRAPH_WORKERS` value of `--graph-workers` (default `1,8`): the offline default of
   one worker, where a query that waits for it is sent `queued` at once, and eight, the alternative of
   adding workers; the first is the one judged.

`--log` appends the run to bench/results/bench_first_question.json (`make bench` appends it itself).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_stream import (  # noqa: E402
    NAMESPACE,
    QUESTIONS,
    clients,
    demo_storage,
    one_stream,
    percentiles,
    start_server,
    summary,
)

FIRST_MODES = ("basic", "local", "global", "drift")
TARGET_FIRST_DONE_P50_MS = 2000.0
TARGET_FIRST_EVENT_P50_MS = 150.0


def first_questions(work: Path, storage: Path, keys: list[str], processes: int) -> dict[str, Any]:
    """Per mode: `processes` fresh servers, one streamed question each right after `/readyz`."""
    out: dict[str, Any] = {}
    for mode in FIRST_MODES:
        rows = []
        for i in range(processes):
            server, base = start_server(work, storage, keys[:1])
            try:
                with httpx.Client(base_url=base, timeout=180.0) as http:
                    row = one_stream(http, mode, keys[0], QUESTIONS[i % len(QUESTIONS)])
                    status = http.get(f"/v1/namespaces/{NAMESPACE}/status", headers=auth(keys[0])).json()
                    row["warm"] = status.get("warm") or {}
                    rows.append(row)
            finally:
                server.terminate()
                server.wait(timeout=60)
            print(f"first {mode} #{i}: {rows[-1]}", file=sys.stderr, flush=True)
        ok = [r for r in rows if r.get("ended") == "done"]
        out[mode] = {
            "processes": processes,
            "ended_done": len(ok),
            "first_event_ms": percentiles([r["first_ms"] for r in ok]),
            "done_ms": percentiles([r["done_ms"] for r in ok]),
            # the warm start's own time for the namespace (after the process's pieces), as its status says
            "warm_s": percentiles([r["warm"]["seconds"] for r in ok if r["warm"].get("seconds") is not None]),
        }
    return out


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def under_load(work: Path, storage: Path, keys: list[str], requests: int, workers: int) -> dict[str, Any]:
    """Local streams from `len(keys)` clients at once on one warmed server with `workers` graph workers."""
    server, base = start_server(work, storage, keys, {"PIPELINE_SERVICE_GRAPH_WORKERS": str(workers)})
    try:
        with httpx.Client(base_url=base, timeout=180.0) as http:
            for mode in FIRST_MODES:
                one_stream(http, mode, keys[0], QUESTIONS[0])
        return summary(clients(base, "local", keys, len(keys), requests))
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, help="a storage root holding namespace 'demo'")
    parser.add_argument("--processes", type=int, default=5, help="fresh processes per mode")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--requests", type=int, default=10, help="local questions each client asks")
    parser.add_argument(
        "--graph-workers",
        default="1,8",
        help="PIPELINE_SERVICE_GRAPH_WORKERS values part 2 runs with, comma-separated (the first is judged)",
    )
    parser.add_argument("--skip-first", action="store_true", help="only part 2")
    # Opt-in: `make bench` (bench/run_all.py) appends each bench's run itself
    parser.add_argument("--log", action="store_true", help="append the run to bench/results")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_first_question_"))
    try:
        storage = args.storage or demo_storage(work)
        from pipeline.service.auth import generate_key

        keys = [generate_key() for _ in range(args.concurrency)]
        out: dict[str, Any] = {
            "index": "samples/demo, offline",
            "target": {
                "first_question_done_p50_ms": TARGET_FIRST_DONE_P50_MS,
                "concurrent_local_first_event_p50_ms": TARGET_FIRST_EVENT_P50_MS,
            },
        }
        started = time.perf_counter()
        if not args.skip_first:
            out["first_question"] = first_questions(work, storage, keys, args.processes)
        loads = {}
        for workers in [int(w) for w in args.graph_workers.split(",")]:
            loads[f"graph_workers_{workers}"] = under_load(work, storage, keys, args.requests, workers)
        out[f"local_concurrent_{args.concurrency}"] = {"requests_per_client": args.requests, **loads}
        judged = next(iter(loads.values()))
        firsts = out.get("first_question", {})
        out["meets_target"] = (
            all(m["done_ms"].get("p50", 1e9) <= TARGET_FIRST_DONE_P50_MS for m in firsts.values())
            and judged["first_event_ms"].get("p50", 1e9) <= TARGET_FIRST_EVENT_P50_MS
        )
        out["run_s"] = round(time.perf_counter() - started, 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    if args.log:
        from bench.results_log import append_run

        append_run("bench_first_question", out, command=" ".join([".venv/bin/python", *sys.argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
