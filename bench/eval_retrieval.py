"""Retrieval recall@k of gold passages on a HippoRAG-style dataset, offline engine; prints JSON.

    .venv/bin/python bench/eval_retrieval.py [--dataset DIR] [--questions N] [--storage DIR]

DIR holds `<name>_corpus.json` (a list of {title, text}) and `<name>.json` (questions) in one of the
formats HippoRAG ships: MuSiQue (paragraphs[{title, paragraph_text, is_supporting}]), HotpotQA or
2WikiMultihopQA (supporting_facts [[title, sent_id]] + context). The corpus is indexed through the
Dagster job (documents -> ... -> report embeddings) once per storage folder, then every question is
asked of (a) plain vector search over text units and (b) local search, and recall@5/@10 of the gold
passages (matched by title) is reported for both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DEFAULT_DATASET = ROOT.parent / "shared" / "data" / "musique_hipporag100"


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


def recall(ranked_titles: list[str], gold: list[str], k: int) -> float:
    top = list(dict.fromkeys(ranked_titles))[:k]
    return sum(1 for g in gold if g in top) / len(gold) if gold else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions")
    parser.add_argument(
        "--storage", type=Path, default=None, help="reuse an index here (default: a temp folder)"
    )
    parser.add_argument("--namespace", default="eval")
    args = parser.parse_args()

    corpus, qfile = find_files(args.dataset)
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
    from pipeline.query.local_search import LocalSearchConfig, local_search_async
    from pipeline.query.search import vector_search
    from pipeline.runtime import cached_embedder
    from pipeline.settings import load_settings

    out: dict = {"dataset": str(args.dataset), "questions": len(questions)}
    store = NamespaceStore(storage, args.namespace)
    if not store.has_table("communities"):
        input_dir = work / "input"
        input_dir.mkdir()
        shutil.copy(corpus, input_dir / corpus.name)
        t = time.perf_counter()
        result = run_index(args.namespace, input_dir=str(input_dir))
        out["index_s"] = round(time.perf_counter() - t, 1)
        if not result.success:
            raise SystemExit(f"indexing failed: {result.failures}")
        out["index_steps"] = {
            s.asset: {k: v for k, v in s.metadata.items() if isinstance(v, int | float)} for s in result.steps
        }

    embedder = cached_embedder(load_settings())
    engine = OfflineEngine()
    import asyncio

    sums = {"vector@5": 0.0, "vector@10": 0.0, "local@5": 0.0, "local@10": 0.0}
    latency = {"vector": 0.0, "local": 0.0}
    for q in questions:
        gold = gold_titles(q)
        t = time.perf_counter()
        hits = vector_search(store, embedder, q["question"], k=10)
        latency["vector"] += time.perf_counter() - t
        v_titles = [h["document_title"] for h in hits]
        t = time.perf_counter()
        res = asyncio.run(local_search_async(store, q["question"], engine, embedder, LocalSearchConfig()))
        latency["local"] += time.perf_counter() - t
        l_titles = [e["document_title"] for e in res.evidence if e["kind"] == "chunk"]
        for k in (5, 10):
            sums[f"vector@{k}"] += recall(v_titles, gold, k)
            sums[f"local@{k}"] += recall(l_titles, gold, k)
    n = max(1, len(questions))
    out["recall"] = {k: round(v / n, 4) for k, v in sums.items()}
    out["mean_latency_s"] = {k: round(v / n, 4) for k, v in latency.items()}
    print(json.dumps(out, indent=2))
    if args.storage is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
