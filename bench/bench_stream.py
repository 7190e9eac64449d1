"""Streamed answers: time to the first Server-Sent Event and to `done`, offline, on the demo index; prints JSON.

    .venv/bin/python bench/bench_stream.py [--storage DIR] [--requests 40] [--concurrency 8] [--out FILE]

The index is samples/demo (A Christmas Carol) built offline into a temporary folder, or `--storage DIR`
holding namespace `demo` (`make demo`'s storage). The server is the real one (`graphrag-serve`, uvicorn,
the offline engine) started as a subprocess with one tenant key per client, so that the per-key limit
(`PIPELINE_SERVICE_KEY_CONCURRENCY`) never makes one client wait on another's slot.

For each of basic and local: `POST /v1/query/<mode>` with `"stream": true`, first one client asking
`--requests` questions one after another, then `--concurrency` clients at once, each asking `--requests`
(the demo's ten questions in turn, each client starting at a different one), after a warm-up that asks
each question once. Measured per request, from just before it is sent: the first SSE event's arrival
(its `event:` line: `route`, sent as the query starts), the first `delta` (answer text) and the `done`
event's. Reported: p50/p95/max of each in milliseconds, the events per stream, and the issue's target
(first event p50 within 150 ms). Then the web app at `/` in headless Chromium (`make browser` installs
it): its first contentful paint, from the browser's own paint timing, over `--loads` fresh loads with
the cache disabled (target: 1 s). `bench/run_all.py bench_stream` appends the run to
bench/results/bench_stream.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from serve_process import start_graphrag_serve  # noqa: E402

NAMESPACE = "demo"
MODES = ("basic", "local")
QUESTIONS = [
    "How is Scrooge related to Bob Cratchit?",
    "What happens at Fezziwig's party?",
    "Who is Jacob Marley?",
    "What does the Ghost of Christmas Past show Scrooge?",
    "What happens to Tiny Tim?",
    "Who is Scrooge's nephew Fred?",
    "What does Scrooge do on Christmas morning?",
    "Who is Belle?",
    "What does the Ghost of Christmas Yet to Come show?",
    "What is Scrooge's business?",
]
TARGET_FIRST_EVENT_P50_MS = 150.0
TARGET_FIRST_PAINT_MS = 1000.0
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    qs = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {"n": len(values), "p50": round(qs[49], 1), "p95": round(qs[94], 1), "max": round(max(values), 1)}


def one_stream(http: httpx.Client, mode: str, key: str, question: str) -> dict[str, Any]:
    """One streamed query: ms to the first event and to `done`, the events it sent, how it ended."""
    body = {"namespace": NAMESPACE, "question": question, "stream": True}
    headers = {"Authorization": f"Bearer {key}"}
    started = time.perf_counter()
    first = delta = done = None
    kinds: list[str] = []
    with http.stream("POST", f"/v1/query/{mode}", json=body, headers=headers) as response:
        if response.status_code != 200:
            response.read()
            return {"error": f"{response.status_code}: {response.text[:200]}"}
        for line in response.iter_lines():
            if not line.startswith("event:"):
                continue
            kind = line.split(":", 1)[1].strip()
            now = (time.perf_counter() - started) * 1000
            first = now if first is None else first
            delta = now if delta is None and kind == "delta" else delta
            kinds.append(kind)
            if kind in ("done", "error"):
                done = now
    ended = kinds[-1] if kinds else None
    return {"first_ms": first, "delta_ms": delta, "done_ms": done, "events": len(kinds), "ended": ended}


def clients(base: str, mode: str, keys: list[str], n: int, requests: int) -> list[dict[str, Any]]:
    """`n` clients at once, each asking `requests` questions one after another."""
    rows: list[dict[str, Any]] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        with httpx.Client(base_url=base, timeout=180.0) as http:
            for r in range(requests):
                row = one_stream(http, mode, keys[i], QUESTIONS[(i * 3 + r) % len(QUESTIONS)])
                with lock:
                    rows.append(row)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if r.get("ended") == "done"]
    return {
        "streams": len(rows),
        "ended_done": len(ok),
        "errors": sorted({str(r.get("error") or r.get("ended")) for r in rows if r not in ok}),
        "first_event_ms": percentiles([r["first_ms"] for r in ok]),
        "first_delta_ms": percentiles([r["delta_ms"] for r in ok if r["delta_ms"] is not None]),
        "done_ms": percentiles([r["done_ms"] for r in ok]),
        "events_per_stream": percentiles([float(r["events"]) for r in ok]),
    }


def start_server(
    work: Path, storage: Path, keys: list[str], extra: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The server on `storage` with one tenant per key; `extra`: more of its environment."""
    from pipeline.service.auth import hash_key

    tenants = {
        f"client{i}": {"key_sha256": hash_key(k), "namespaces": [NAMESPACE]} for i, k in enumerate(keys)
    }
    (work / "keys.yaml").write_text(yaml.safe_dump({"tenants": tenants}))
    env = {
        **os.environ,
        "PIPELINE_LLM_PROVIDER": "offline",
        "PIPELINE_STORAGE_ROOT": str(storage),
        "PIPELINE_API_KEYS_FILE": str(work / "keys.yaml"),
        **(extra or {}),
    }
    return start_graphrag_serve(work, env)


def demo_storage(work: Path) -> Path:
    """samples/demo indexed offline into `work`/storage (namespace `demo`); that storage root."""
    storage = work / "storage"
    os.environ.update({"PIPELINE_LLM_PROVIDER": "offline", "PIPELINE_STORAGE_ROOT": str(storage)})
    from pipeline.index.run import index_folder

    index_folder(NAMESPACE, ROOT / "samples" / "demo", log=lambda line: print(line, file=sys.stderr))
    return storage


def first_paints(base: str, loads: int) -> list[float]:
    """The web app's first contentful paint (ms after navigation start), one fresh load at a time."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    paints = []
    try:
        driver.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
        for _ in range(loads):
            driver.get(base + "/")
            paint = driver.execute_script(
                "const p = performance.getEntriesByName('first-contentful-paint')[0];"
                "return p ? p.startTime : null;"
            )
            if paint is not None:
                paints.append(float(paint))
    finally:
        driver.quit()
    return paints


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, help="a storage root holding namespace 'demo'")
    parser.add_argument("--requests", type=int, default=40, help="questions each client asks")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--loads", type=int, default=10, help="fresh loads of the web app in Chromium")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_stream_"))
    server = None
    try:
        storage = args.storage or demo_storage(work)
        from pipeline.service.auth import generate_key

        keys = [generate_key() for _ in range(args.concurrency)]
        server, base = start_server(work, storage, keys)
        with httpx.Client(base_url=base, timeout=180.0) as http:  # loads the namespace's tables
            for mode in MODES:
                for question in QUESTIONS:
                    one_stream(http, mode, keys[0], question)
        out: dict[str, Any] = {
            "index": "samples/demo, offline",
            "requests_per_client": args.requests,
            "target": {"first_event_p50_ms": TARGET_FIRST_EVENT_P50_MS},
        }
        for mode in MODES:
            single = summary(clients(base, mode, keys, 1, args.requests))
            together = summary(clients(base, mode, keys, args.concurrency, args.requests))
            out[mode] = {"single": single, f"concurrent_{args.concurrency}": together}
        paint = percentiles(first_paints(base, args.loads))
        out["web_app_first_paint_ms"] = {**paint, "target": TARGET_FIRST_PAINT_MS, "loads": args.loads}
        out["meets_target"] = (
            all(
                out[m]["single"]["first_event_ms"].get("p50", 1e9) <= TARGET_FIRST_EVENT_P50_MS for m in MODES
            )
            and paint.get("p50", 1e9) <= TARGET_FIRST_PAINT_MS
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
