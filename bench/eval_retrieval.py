"""Retrieval recall@k of gold passages on a multi-hop question set, offline engine; prints JSON.

    .venv/bin/python bench/eval_retrieval.py [--dataset DIR] [--questions N] [--storage DIR] [--reindex]

DIR holds a corpus `<name>_corpus.json` and its questions `<name>.json`, in the shapes HippoRAG ships:
- corpus: a list of {title, text}, or a dict {title: [sentences]} (joined with spaces);
- questions: MuSiQue (`paragraphs[{title, is_supporting}]`) or HotpotQA / 2WikiMultihopQA
  (`supporting_facts [[title, sentence]]`).
The corpus is indexed through the Dagster job once per storage folder (`--reindex` runs the job again:
every cached stage is reused, so this costs only what changed). Then every question is asked of
- `vector`: plain vector search over text units (`pipeline.query.retrieval.nearest.vector_search`);
- `basic`: basic search (dense + BM25 fused, then the offline answer), ranked by its retrieved units: the
  vector-RAG baseline every GraphRAG mode must beat;
- `local`: local search (offline engine, whole flow with the answer), ranked by its fused passages;
- `lazy`: lazy search (offline engine, whole flow with the answer), ranked by its relevant units;
- each passage signal alone (`only:<signal>`) and the fusion without each (`without:<signal>`), with the
  seeds local search matched for that question (`pipeline.query.retrieval.passage_rank`);
and recall@2/5/10 of the gold passages (matched by document title, as HippoRAG does) is reported,
with p50/p95 latency per method. Local and lazy latency is the whole query after one warm-up question.
`context_gold` counts the gold passages inside the answer's context (its Sources rows) of local and lazy
search at the same context token budgets (`--context-budgets`, the whole answer prompt). `routing` is
`bench/eval_routing.py`'s confusion table on GraphRAG-Bench novel split A (skipped with --no-routing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "musique_hipporag100"
KS = (2, 5, 10)


def gold_titles(question: dict) -> list[str]:
    if "paragraphs" in question:  # MuSiQue
        return list(dict.fromkeys(p["title"] for p in question["paragraphs"] if p.get("is_supporting")))
    if "supporting_facts" in question:  # HotpotQA / 2Wiki
        return list(dict.fromkeys(f[0] for f in question["supporting_facts"]))
    raise ValueError(
        "unknown question format: expected 'paragraphs' (MuSiQue) or 'supporting_facts' (HotpotQA/2Wiki)"
    )


def find_files(dataset: Path) -> tuple[Path, Path]:
    corpus = next(iter(sorted(dataset.glob("*_corpus.json"))), None)
    if corpus is None:
        raise FileNotFoundError(f"{dataset}: no *_corpus.json")
    questions = dataset / corpus.name.replace("_corpus.json", ".json")
    if not questions.is_file():
        raise FileNotFoundError(f"{dataset}: no {questions.name} beside {corpus.name}")
    return corpus, questions


def corpus_records(corpus: object) -> list[dict[str, str]]:
    """The corpus as a list of {title, text}, from either shape HippoRAG ships."""
    if isinstance(corpus, list):
        return [{"title": str(r["title"]), "text": str(r["text"])} for r in corpus]
    if isinstance(corpus, dict):
        return [
            {
                "title": str(t),
                "text": " ".join(s.strip() for s in sents) if isinstance(sents, list) else str(sents),
            }
            for t, sents in corpus.items()
        ]
    raise ValueError(
        f"a corpus is a list of {{title, text}} or a dict {{title: [sentences]}}, not {type(corpus)}"
    )


def recall(ranked_titles: list[str], gold: list[str], k: int) -> float:
    top = list(dict.fromkeys(ranked_titles))[:k]
    return sum(1 for g in gold if g in top) / len(gold) if gold else 0.0


def context_gold(rows: list[dict], gold: list[str]) -> int:
    """Gold passages among a context's Sources rows (by document title)."""
    titles = {r.get("document_title") for r in rows if r.get("section") == "sources"}
    return sum(1 for g in gold if g in titles)


class Tally:
    def __init__(self) -> None:
        self.recall: dict[str, dict[int, float]] = {}
        self.latency: dict[str, list[float]] = {}

    def add(self, method: str, titles: list[str], gold: list[str], seconds: float | None = None) -> None:
        r = self.recall.setdefault(method, dict.fromkeys(KS, 0.0))
        for k in KS:
            r[k] += recall(titles, gold, k)
        if seconds is not None:
            self.latency.setdefault(method, []).append(seconds)

    def report(self, n: int) -> dict:
        return {
            "recall": {
                m: {f"R@{k}": round(100 * v / n, 1) for k, v in r.items()} for m, r in self.recall.items()
            },
            "latency_ms": {
                m: {
                    "p50": round(1000 * float(np.percentile(v, 50)), 1),
                    "p95": round(1000 * float(np.percentile(v, 95)), 1),
                }
                for m, v in self.latency.items()
            },
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions")
    parser.add_argument(
        "--storage", type=Path, default=None, help="reuse an index here (default: a temp folder)"
    )
    parser.add_argument("--reindex", action="store_true", help="run the indexing job even if an index exists")
    parser.add_argument("--namespace", default="eval")
    parser.add_argument(
        "--context-budgets", default="12000,4000", help="answer-prompt token budgets for context_gold"
    )
    parser.add_argument("--no-routing", action="store_true", help="skip the routing confusion table")
    args = parser.parse_args()
    budgets = [int(b) for b in args.context_budgets.split(",") if b.strip()]

    corpus_file, qfile = find_files(args.dataset)
    questions = json.loads(qfile.read_text(encoding="utf-8"))[: args.questions]
    work = Path(tempfile.mkdtemp(prefix="eval_"))
    storage = args.storage or work / "storage"
    os.environ["PIPELINE_STORAGE_ROOT"] = str(storage)
    os.environ.setdefault("DAGSTER_HOME", str(work / "dagster_home"))
    Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "dagster.yaml", Path(os.environ["DAGSTER_HOME"]) / "dagster.yaml")

    from assets.launch import run_index
    from pipeline.engine.offline import OfflineEngine
    from pipeline.io.store import NamespaceStore
    from pipeline.query.basic.search import BasicSearchConfig, basic_search_async
    from pipeline.query.common.scope import QueryScope
    from pipeline.query.lazy.search import LazySearchConfig, lazy_search_async
    from pipeline.query.local.search import LocalSearchConfig, local_search_async
    from pipeline.query.retrieval.local_index import load_local_index
    from pipeline.query.retrieval.nearest import vector_search
    from pipeline.query.retrieval.passage_index import load_passage_index
    from pipeline.query.retrieval.passage_rank import SIGNALS, PassageRankOptions, rank_passages
    from pipeline.runtime import cached_embedder
    from pipeline.settings import load_settings

    out: dict = {"dataset": str(args.dataset), "questions": len(questions)}
    store = NamespaceStore(storage, args.namespace)
    if args.reindex or not store.has_table("communities"):
        input_dir = work / "input"
        input_dir.mkdir()
        records = corpus_records(json.loads(corpus_file.read_text(encoding="utf-8")))
        (input_dir / corpus_file.name).write_text(json.dumps(records), encoding="utf-8")
        t = time.perf_counter()
        result = run_index(args.namespace, input_dir=str(input_dir))
        out["index_s"] = round(time.perf_counter() - t, 1)
        if not result.success:
            raise SystemExit(f"indexing failed: {result.failures}")
        out["index_stage_s"] = {s.asset: s.metadata.get("duration_s") for s in result.steps}

    embedder = cached_embedder(load_settings())
    engine = OfflineEngine()
    cfg = LocalSearchConfig()
    basic_cfg = BasicSearchConfig(top_k=max(KS))
    graph = load_local_index(store)
    passages = load_passage_index(store)
    title_of = {uid: graph.document_titles.get(u["document_id"], "") for uid, u in graph.text_units.items()}
    asyncio.run(local_search_async(QueryScope(store, engine, embedder), "warm-up question", cfg))
    lazy_cfg = LazySearchConfig(context_max_tokens=cfg.context_max_tokens)
    asyncio.run(lazy_search_async(QueryScope(store, engine, embedder), "warm-up question", lazy_cfg))
    gold_in_context: dict[str, int] = {}
    total_gold = 0

    enabled = cfg.passages.signals
    variants = {f"only:{s}": (s,) for s in SIGNALS}
    variants |= {f"without:{s}": tuple(x for x in enabled if x != s) for s in enabled if len(enabled) > 1}
    tally = Tally()
    for q in questions:
        gold = gold_titles(q)
        t = time.perf_counter()
        hits = vector_search(store, embedder, q["question"], k=10)
        tally.add("vector", [h["document_title"] for h in hits], gold, time.perf_counter() - t)
        t = time.perf_counter()
        basic = asyncio.run(basic_search_async(QueryScope(store, engine, embedder), q["question"], basic_cfg))
        tally.add("basic", [s["document_title"] for s in basic.sources], gold, time.perf_counter() - t)
        t = time.perf_counter()
        res = asyncio.run(local_search_async(QueryScope(store, engine, embedder), q["question"], cfg))
        tally.add("local", [title_of[p["id"]] for p in res.passages], gold, time.perf_counter() - t)
        t = time.perf_counter()
        lz = asyncio.run(lazy_search_async(QueryScope(store, engine, embedder), q["question"], lazy_cfg))
        tally.add("lazy", [s["document_title"] for s in lz.sources], gold, time.perf_counter() - t)
        total_gold += len(gold)
        for budget in budgets:
            lrows = res.context_rows
            zrows = lz.context_rows
            if budget != cfg.context_max_tokens:
                lcfg = replace(cfg, context_max_tokens=budget)
                lrows = asyncio.run(
                    local_search_async(QueryScope(store, engine, embedder), q["question"], lcfg)
                ).context_rows
                zcfg = replace(lazy_cfg, context_max_tokens=budget)
                zrows = asyncio.run(
                    lazy_search_async(QueryScope(store, engine, embedder), q["question"], zcfg)
                ).context_rows
            for name, rows in (("local", lrows), ("lazy", zrows)):
                key = f"{name}@{budget}"
                gold_in_context[key] = gold_in_context.get(key, 0) + context_gold(rows, gold)
        vector = embedder.embed([q["question"]])[0]
        seeds = [s["id"] for s in res.seeds]
        for name, signals in variants.items():
            t = time.perf_counter()
            ranked = rank_passages(
                store, passages, q["question"], vector, seeds, PassageRankOptions(signals=signals)
            )
            tally.add(name, [title_of[p.id] for p in ranked], gold, time.perf_counter() - t)
    out |= tally.report(max(1, len(questions)))
    out["context_gold"] = {"gold_passages": total_gold, **gold_in_context}
    if not args.no_routing:
        from bench.eval_routing import evaluate

        out["routing"] = evaluate()
    print(json.dumps(out, indent=2))
    if args.storage is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
