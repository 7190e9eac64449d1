"""Global search over the podcast index: offline latency, batches and tokens per question, and the LLM
path's wall time through the fault proxy (200 ms per call) against the ideal; prints JSON.

    .venv/bin/python bench/bench_index_podcasts.py --no-embed --keep /tmp/podcasts   # build once
    .venv/bin/python bench/bench_global_search.py --storage /tmp/podcasts/storage [--questions 10]

The index is any namespace with communities and community_reports (`--namespace`, default the one
bench_index_podcasts writes). Questions: ../shared/data/graphrag_podcasts/kevin_scott_questions.csv.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.caches.sqlite_llm import LLMCache  # noqa: E402
from pipeline.engine.llm import LLMEngine  # noqa: E402
from pipeline.engine.offline import OfflineEngine  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.llm import LLMClient  # noqa: E402
from pipeline.query.common.scope import QueryScope  # noqa: E402
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async  # noqa: E402
from pipeline.query.questions import load_questions  # noqa: E402
from pipeline.runtime import cached_embedder  # noqa: E402
from pipeline.settings import load_settings  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402

QUESTIONS = ROOT.parent / "shared" / "data" / "graphrag_podcasts" / "kevin_scott_questions.csv"
LATENCY_S = 0.2


def _namespace(storage: Path, requested: str | None) -> str:
    if requested:
        return requested
    found = sorted(p.name for p in storage.iterdir() if (p / "community_reports.parquet").exists())
    if not found:
        raise SystemExit(f"{storage}: no namespace with community_reports.parquet; build one first")
    return found[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--storage", type=Path, default=None, help="default: build the podcast index (offline)"
    )
    parser.add_argument("--namespace", default=None)
    parser.add_argument("--questions", type=int, default=10, help="first N of the 125 questions")
    parser.add_argument("--level", type=int, default=None)
    args = parser.parse_args()

    if args.storage is None:
        work = Path(tempfile.mkdtemp(prefix="bench_global_"))
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "bench_index_podcasts.py"),
                "--no-embed",
                "--keep",
                str(work),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        args.storage = work / "storage"
    store = NamespaceStore(args.storage, _namespace(args.storage, args.namespace))
    questions = load_questions(questions_file=str(QUESTIONS))[: args.questions]
    config = GlobalSearchConfig(level=args.level)
    embedder = cached_embedder(load_settings(storage_root=str(args.storage)))
    out: dict = {"namespace": store.namespace, "questions": len(questions), "level": args.level}

    rows = []
    for q in questions:
        t = time.perf_counter()
        r = asyncio.run(global_search_async(QueryScope(store, OfflineEngine(), embedder), q, config))
        rows.append({"s": time.perf_counter() - t, "batches": r.batches, "status": r.status})
    lat = sorted(x["s"] for x in rows)
    out["offline"] = {
        "latency_s_p50": round(statistics.median(lat), 3),
        "latency_s_max": round(lat[-1], 3),
        "first_question_s": round(rows[0]["s"], 3),  # embeds every report sentence once (then cached)
        "batches_per_question": rows[0]["batches"],
        "statuses": {s: sum(x["status"] == s for x in rows) for s in {x["status"] for x in rows}},
    }
    from pipeline.query.global_.search import plan_batches

    batches = plan_batches(store, questions[0], config)
    out["offline"]["map_tokens_per_question"] = sum(b.tokens for b in batches)

    def responder(request: dict) -> str:
        if request["messages"][0]["content"].startswith("You judge whether community reports"):
            ids = re.findall(r"^(-?\d+): ", request["messages"][-1]["content"], re.MULTILINE)
            return json.dumps({"ratings": [{"community": int(i), "score": 6} for i in ids]})
        if "Partial answers:" in request["messages"][-1]["content"]:
            return json.dumps({"answer": "A reduced answer [Communities: 1]"})
        return json.dumps({"points": [{"description": "A point", "score": 50, "communities": [1]}]})

    timings = []
    with FaultProxy(None, latency_s=LATENCY_S, responder=responder) as proxy:
        for q in questions[:3]:
            client = LLMClient(
                model="bench",
                api_key="bench",
                base_url=proxy.base_url,
                json_mode="json_object",
                cache=LLMCache(Path(tempfile.mkdtemp(prefix="bench_global_llm_")) / "llm.sqlite"),
            )
            t = time.perf_counter()
            r = asyncio.run(global_search_async(QueryScope(store, LLMEngine(client), None), q, config))
            timings.append((time.perf_counter() - t, r.batches))
    wall, n = timings[0]
    ideal = n * LATENCY_S / config.map_concurrency + LATENCY_S  # map waves + one reduce (static selection)
    out["proxy_200ms"] = {
        "batches": n,
        "map_concurrency": config.map_concurrency,
        "wall_s": [round(w, 3) for w, _ in timings],
        "ideal_s": round(ideal, 3),
        "ratio_to_ideal": round(statistics.median(w for w, _ in timings) / ideal, 3),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
