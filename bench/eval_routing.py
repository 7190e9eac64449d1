"""Routing measured on GraphRAG-Bench's novel split A: the confusion table of question type vs route.

    .venv/bin/python bench/eval_routing.py [--questions FILE] [--limit N]

Each question is routed offline (`pipeline.query.auto.route.offline_route`: rules on the question's
form, then the nearest prototype by the MiniLM embedder), as `auto` does with the offline engine on a namespace that has every
mode's tables. The four types are Fact Retrieval, Complex Reasoning, Contextual Summarize and Creative
Generation; the two rules checked are: a summary never routes to basic, a fact lookup never to global.
Prints JSON (also called by `bench/eval_retrieval.py`, i.e. `make eval`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_QUESTIONS = ROOT.parent / "shared" / "data" / "graphrag_bench_novel_a" / "novel_questions.json"
ROUTES = ("basic", "local", "global", "drift", "lazy")


def split_a(questions: list[dict]) -> list[dict]:
    """The questions of the first 10 books by sorted corpus name (SOURCE.md's split A)."""
    books = sorted({q["source"] for q in questions})[:10]
    return [q for q in questions if q["source"] in books]


def evaluate(path: Path = DEFAULT_QUESTIONS, limit: int | None = None) -> dict:
    from pipeline.query import registry
    from pipeline.query.auto.route import offline_route, route_hints
    from pipeline.runtime import cached_embedder
    from pipeline.settings import load_settings

    questions = split_a(json.loads(path.read_text(encoding="utf-8")))[:limit]
    embedder = cached_embedder(load_settings())
    table: dict[str, Counter] = {}
    started = time.perf_counter()
    embedder.embed([q["question"] for q in questions])  # one batch: each route then reads the cache
    for q in questions:
        route = offline_route(q["question"], embedder, route_hints(registry.MODES)).route
        table.setdefault(q["question_type"], Counter())[route] += 1
    elapsed = time.perf_counter() - started
    confusion = {t: {r: c.get(r, 0) for r in ROUTES} for t, c in sorted(table.items())}
    summaries = confusion.get("Contextual Summarize", {})
    facts = confusion.get("Fact Retrieval", {})
    return {
        "questions": len(questions),
        "confusion": confusion,
        "summaries_to_basic": summaries.get("basic", 0),
        "facts_to_global": facts.get("global", 0),
        "ms_per_question": round(1000 * elapsed / max(1, len(questions)), 2),
    }


def render(result: dict) -> str:
    lines = [f"{'type':<22}" + "".join(f"{r:>8}" for r in ROUTES)]
    for t, row in result["confusion"].items():
        lines.append(f"{t:<22}" + "".join(f"{row[r]:>8}" for r in ROUTES))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    result = evaluate(args.questions, args.limit)
    print(render(result), file=sys.stderr)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
