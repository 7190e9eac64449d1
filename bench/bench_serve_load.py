"""The query service under load: `graphrag-serve` on 127.0.0.1, concurrent clients, mixed modes; prints JSON.

    .venv/bin/python bench/bench_serve_load.py [--storage DIR] [--size MB] [--clients 16] [--seconds 60]
        [--max-requests 400] [--out DIR]

The index is bench_scale's (Python's documentation sources, offline): `--storage DIR` serves one already
built (`bench_scale.py --keep DIR` leaves it in `DIR/storage`), otherwise `--size` MB of the corpus (1 by
default) are indexed first into a temporary folder. The server is the real one (`graphrag-serve`, uvicorn,
the offline engine), started as a subprocess with a keys file of one tenant per client, so the per-key
limits (`PIPELINE_SERVICE_KEY_CONCURRENCY`, 4) are those of a production tenant and no client waits on
another's slots.

Each client sends its requests one after another until `--seconds` have passed or it has sent
`--max-requests` (a bounded loop: the clients stop by themselves). The mix, fixed by the request's number:
basic 40%, local 20%, auto 10%, global (dynamic selection) 10%, DRIFT 5% and 15% invalid requests (no key,
a key for another namespace, a malformed namespace, an unknown field, an empty question, top_k 0, a body
that is not JSON, an unknown path, a body over the size limit). The questions are made from the corpus's
own page titles, so that few repeat. Reported: requests and throughput, latency p50/p95/p99 per mode,
responses by status code, 5xx responses, invalid requests answered without a 4xx and a message, and the
server's RSS after warm-up (one question per mode), at each tenth of the run (sampled once a second: a
cache filling levels off, a leak does not) and at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_scale import NAMESPACE, QUESTIONS, build_corpus, ensure_sources  # noqa: E402
from serve_process import start_graphrag_serve  # noqa: E402

MIX = (
    ["basic"] * 8 + ["local"] * 4 + ["auto"] * 2 + ["global"] * 2 + ["drift"] + ["invalid"] * 3
)  # 20 slots: the shares above
INVALID = ("no_key", "other_namespace", "bad_namespace", "unknown_field", "empty_question", "top_k_0",
           "not_json", "unknown_path", "too_large")  # fmt: skip
TARGETS = {"p99_basic_s": 1.0, "5xx": 0, "rss_growth": 0.10}
_ROLE = re.compile(r":\w+:`~?([^`]+)`")


def corpus_questions(corpus: Path, limit: int = 400) -> list[str]:
    """Questions about the corpus's pages, from their reStructuredText titles (a line underlined with
    `=`, `*` or `-`), then bench_scale's own twenty."""
    titles: list[str] = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for above, line in zip(lines, lines[1:], strict=False):
            if (
                above.strip()
                and len(line) >= 3
                and set(line.strip()) <= set("=*-")
                and len(line.strip()) >= 3
            ):
                title = " ".join(_ROLE.sub(r"\1", above).replace("---", "-").split())
                if 3 <= len(title) <= 80 and title not in titles:
                    titles.append(title)
                break
    shapes = ("What does the documentation say about {}?", "How is {} used?", "What is {} for?")
    asked = [shapes[i % len(shapes)].format(t) for i, t in enumerate(titles)]
    return (asked + QUESTIONS)[:limit]


def keys_file(path: Path, clients: int) -> list[str]:
    """One tenant per client, each covering the bench's namespace; returns the plain keys."""
    from pipeline.service.auth import generate_key, hash_key

    keys = [generate_key() for _ in range(clients)]
    tenants = {
        f"client{i}": {"key_sha256": hash_key(k), "namespaces": [NAMESPACE]} for i, k in enumerate(keys)
    }
    tenants["other"] = {"key_sha256": hash_key(other := generate_key()), "namespaces": ["other_docs"]}
    path.write_text(yaml.safe_dump({"tenants": tenants}))
    return [*keys, other]


def request_for(kind: str, n: int, question: str, key: str, other_key: str) -> dict[str, Any]:
    """(method, path, headers, body) of request `n` of this kind."""
    auth = {"Authorization": f"Bearer {key}"}
    body: dict[str, Any] = {"namespace": NAMESPACE, "question": question}
    if kind == "global":
        body["selection"] = "dynamic"
    if kind != "invalid":
        return {"path": f"/v1/query/{kind}", "headers": auth, "json": body}
    bad = INVALID[n % len(INVALID)]
    basic = "/v1/query/basic"
    return {
        "no_key": {"path": basic, "headers": {}, "json": body},
        "other_namespace": {"path": basic, "headers": {"Authorization": f"Bearer {other_key}"}, "json": body},
        "bad_namespace": {"path": basic, "headers": auth, "json": {**body, "namespace": "../etc"}},
        "unknown_field": {"path": basic, "headers": auth, "json": {**body, "colour": "blue"}},
        "empty_question": {"path": basic, "headers": auth, "json": {**body, "question": "  "}},
        "top_k_0": {"path": basic, "headers": auth, "json": {**body, "top_k": 0}},
        "not_json": {
            "path": basic,
            "headers": {**auth, "Content-Type": "application/json"},
            "content": b"{no",
        },
        "unknown_path": {"path": "/v1/query/telepathy", "headers": auth, "json": body},
        "too_large": {"path": basic, "headers": auth, "json": {**body, "question": "x" * 70_000}},
    }[bad] | {"invalid": bad}


def client_loop(base: str, i: int, key: str, other: str, questions: list[str], stop_at: float,
                max_requests: int, out: list[dict[str, Any]]) -> None:  # fmt: skip
    with httpx.Client(base_url=base, timeout=180.0) as http:
        for n in range(max_requests):
            if time.monotonic() >= stop_at:
                break
            slot = (i * 7 + n) % len(MIX)  # clients start at different places of the mix
            kind = MIX[slot]
            q = questions[(i * 31 + n * 17) % len(questions)]
            req = request_for(kind, i + n, q, key, other)
            started = time.perf_counter()
            r = http.post(
                req["path"], headers=req["headers"], json=req.get("json"), content=req.get("content")
            )
            latency = time.perf_counter() - started
            message = ""
            with contextlib.suppress(ValueError, AttributeError):  # a body that is not an error object
                message = (r.json().get("error") or {}).get("message") or ""
            out.append(
                {
                    "kind": kind,
                    "invalid": req.get("invalid"),
                    "status": r.status_code,
                    "s": latency,
                    "message": bool(message),
                    "at": started,
                }  # fmt: skip
            )


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    qs = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return {"n": len(values), "p50": round(qs[49], 3), "p95": round(qs[94], 3), "p99": round(qs[98], 3)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, help="a bench_scale --keep folder's storage to serve")
    parser.add_argument("--size", type=float, default=1.0, help="MB of the corpus to index when no --storage")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=400, help="per client: the loop's bound")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_serve_"))
    env = {**os.environ, "PIPELINE_LLM_PROVIDER": "offline"}
    server = None
    try:
        if args.storage is not None:
            storage = args.storage
            corpus = storage.parent / "input"
        else:
            storage, corpus = work / "storage", work / "input"
            build_corpus(ensure_sources(), args.size, corpus)
            os.environ.update({"PIPELINE_LLM_PROVIDER": "offline", "PIPELINE_STORAGE_ROOT": str(storage)})
            from pipeline.index.run import index_folder

            index_folder(NAMESPACE, corpus, log=lambda line: print(line, file=sys.stderr, flush=True))
        questions = corpus_questions(corpus) if corpus.is_dir() else list(QUESTIONS)
        keys = keys_file(work / "keys.yaml", args.clients)
        env |= {"PIPELINE_STORAGE_ROOT": str(storage), "PIPELINE_API_KEYS_FILE": str(work / "keys.yaml")}
        server, base = start_graphrag_serve(work, env)
        with httpx.Client(base_url=base, timeout=180.0) as http:
            for kind in ("basic", "local", "auto", "global", "drift"):  # loads the namespace's tables
                req = request_for(kind, 0, "What is Python?", keys[0], keys[-1])
                http.post(req["path"], headers=req["headers"], json=req["json"]).raise_for_status()
        proc = psutil.Process(server.pid)
        rss_start = proc.memory_info().rss
        rows: list[dict[str, Any]] = []
        stop_at = time.monotonic() + args.seconds
        started = time.perf_counter()
        threads = [
            threading.Thread(
                target=client_loop,
                args=(base, i, keys[i], keys[-1], questions, stop_at, args.max_requests, rows),
            )
            for i in range(args.clients)
        ]
        samples: list[int] = []  # the server's RSS once a second: does it level off or keep growing?
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(1.0):
                with contextlib.suppress(psutil.Error):
                    samples.append(proc.memory_info().rss)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        sampling.set()
        sampler.join()
        elapsed = time.perf_counter() - started
        rss_end = proc.memory_info().rss
        tenths = (
            [samples[min(len(samples) - 1, len(samples) * k // 10)] for k in range(1, 11)] if samples else []
        )
        valid = [r for r in rows if r["kind"] != "invalid"]
        invalid = [r for r in rows if r["kind"] == "invalid"]
        result = {
            "clients": args.clients,
            "seconds": round(elapsed, 1),
            "requests": len(rows),
            "throughput_rps": round(len(rows) / elapsed, 2),
            "questions": len(questions),
            "latency": {
                kind: percentiles([r["s"] for r in valid if r["kind"] == kind and r["status"] == 200])
                for kind in dict.fromkeys(MIX)
                if kind != "invalid"
            },
            # When the slowest basic answers were asked (seconds into the run): a burst at the start,
            # when every client asks at once, or all along.
            "slowest_basic": [
                {"at_s": round(r["at"] - started, 1), "s": round(r["s"], 3)}
                for r in sorted((r for r in valid if r["kind"] == "basic"), key=lambda r: -r["s"])[:5]
            ],
            "statuses": dict(sorted(Counter(str(r["status"]) for r in rows).items())),
            "statuses_by_kind": {
                kind: dict(Counter(str(r["status"]) for r in rows if r["kind"] == kind))
                for kind in dict.fromkeys(MIX)
            },
            "5xx": sum(r["status"] >= 500 for r in rows),
            "invalid_not_4xx_with_message": sum(
                not (400 <= r["status"] < 500 and r["message"]) for r in invalid
            ),
            "invalid_kinds": dict(Counter(r["invalid"] for r in invalid)),
            "server_rss_mb": {
                "start": round(rss_start / 2**20),
                "end": round(rss_end / 2**20),
                "each_tenth_of_the_run": [round(r / 2**20) for r in tenths],
            },
            "rss_growth": round(rss_end / rss_start - 1, 4),
            "targets": TARGETS,
        }
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "bench_serve_load.json").write_text(json.dumps(result) + "\n")
        print(json.dumps(result))
        return 0
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
