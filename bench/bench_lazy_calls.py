"""Lazy search's bounds on a real index, through the scripted OpenAI-compatible server of the tests (on
127.0.0.1, every unit rated relevant, so every branch is walked as far as the budget lets it): the calls
of a question never exceed `max_calls`, the units rated never exceed the budget, and the scripted server
saw exactly the units the result counts.

    .venv/bin/python bench/bench_lazy_calls.py --storage /tmp/musique   # an index `make eval` built

Prints one JSON line per budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_retrieval import DEFAULT_DATASET, find_files  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.query.common.scope import QueryScope  # noqa: E402
from pipeline.query.lazy.search import LazySearchConfig, lazy_search_async  # noqa: E402
from pipeline.runtime import cached_embedder  # noqa: E402
from pipeline.settings import Settings  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402
from tests.test_lazy_search_llm import ScriptedModel, rated_units  # noqa: E402
from tests.test_local_search_llm import engine_for  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, required=True, help="storage root holding the index")
    parser.add_argument("--namespace", default="eval")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--budgets", default="10,100")
    args = parser.parse_args()
    _, questions_file = find_files(DEFAULT_DATASET)
    questions = json.loads(questions_file.read_text(encoding="utf-8"))[: args.questions]
    store = NamespaceStore(args.storage, args.namespace)
    embedder = cached_embedder(Settings(storage_root=args.storage))
    for budget in (int(b) for b in args.budgets.split(",")):
        cfg, rows = LazySearchConfig(budget=budget), []
        for q in questions:
            model = ScriptedModel(score=8)
            with FaultProxy(None, responder=model) as proxy, tempfile.TemporaryDirectory() as tmp:
                result = asyncio.run(
                    lazy_search_async(
                        QueryScope(store, engine_for(proxy.base_url, Path(tmp)), embedder), q["question"], cfg
                    )
                )
                received = proxy.received
            if not (received <= cfg.max_calls and rated_units(model) == result.units_tested <= budget):
                raise SystemExit(
                    f"bound broken on {q['question']!r}: {received} calls, {result.units_tested}"
                )
            rows.append((received, result.units_tested, result.status))
        print(
            json.dumps(
                {
                    "budget": budget,
                    "questions": len(rows),
                    "max_calls": cfg.max_calls,
                    "calls_max": max(r[0] for r in rows),
                    "calls_mean": round(sum(r[0] for r in rows) / len(rows), 2),
                    "units_tested_min": min(r[1] for r in rows),
                    "units_tested_max": max(r[1] for r in rows),
                    "statuses": sorted({r[2] for r in rows}),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
