"""Index MuSiQue-100's 1,890 passages offline through the Dagster job, cold; prints JSON.

    .venv/bin/python bench/bench_index_musique.py [--dataset DIR] [--sample 600]

A fresh storage root, embedding cache and Dagster instance each time, so nothing is reused. Reports:
- `index_s`: the whole job (the target is 180 s on the 2-core machine), and `stage_s` per asset;
- `peak_rss_mb`: this process's peak resident memory (the job runs in it);
- `embedding`: texts/s of the pipeline's embedding path (`CachedEmbedder`, cold cache) against
  `SentenceTransformer.encode` itself on the same texts in the same process: a sample of the texts the
  index embedded (unit pieces under their titles, entity texts, report texts), each way run twice,
  alternating, the faster of each kept (the target is a ratio of 0.8 or more).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_retrieval import DEFAULT_DATASET, corpus_records, find_files  # noqa: E402

TARGET_S = 180


def embedded_texts(store) -> list[str]:  # noqa: ANN001 - NamespaceStore
    """The texts the index embedded: units under their titles, entity texts, report texts."""
    from pipeline.core import schema
    from pipeline.index.report_embeddings import entity_text, report_text
    from pipeline.index.text_unit_embeddings import unit_headers

    table = store.read_table(schema.TEXT_UNITS, columns=["text", "document_id"])
    documents = store.read_table(schema.DOCUMENTS, columns=["id", "title"])
    titles = dict(zip(documents.column("id").to_pylist(), documents.column("title").to_pylist(), strict=True))
    headers = unit_headers(table, titles)
    units = [f"{h}\n{t}" if h else t for h, t in zip(headers, table.column("text").to_pylist(), strict=True)]
    entities = store.read_table(schema.ENTITIES, columns=["title", "description"]).to_pylist()
    reports = store.read_table(schema.COMMUNITY_REPORTS, columns=["title", "summary"]).to_pylist()
    return (
        units
        + [entity_text(e["title"], e["description"]) for e in entities]
        + [report_text(r["title"], r["summary"]) for r in reports]
    )


def embedding_speed(texts: list[str], work: Path) -> dict:
    from pipeline.caches.sqlite_embedding import EmbeddingCache
    from pipeline.embeddings.cached import CachedEmbedder
    from pipeline.runtime import shared_embedder
    from pipeline.settings import load_settings

    model = shared_embedder(load_settings())
    st = model._load()  # noqa: SLF001 - the raw SentenceTransformer, to compare against
    raw, ours = [], []
    for attempt in range(2):
        t = time.perf_counter()
        st.encode(texts, batch_size=model.batch_size, normalize_embeddings=True, show_progress_bar=False)
        raw.append(time.perf_counter() - t)
        cached = CachedEmbedder(model, EmbeddingCache(work / f"speed{attempt}.sqlite"))
        t = time.perf_counter()
        cached.embed(texts, progress=lambda done, total: None)
        ours.append(time.perf_counter() - t)
    n = len(texts)
    return {
        "texts": n,
        "raw_texts_per_s": round(n / min(raw), 1),
        "pipeline_texts_per_s": round(n / min(ours), 1),
        "ratio": round(min(raw) / min(ours), 3),
        "model": model.model_id,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--sample", type=int, default=600, help="texts in the embedding-speed comparison")
    args = parser.parse_args()
    corpus_file, _ = find_files(args.dataset)
    work = Path(tempfile.mkdtemp(prefix="bench_index_"))
    try:
        os.environ["PIPELINE_STORAGE_ROOT"] = str(work / "storage")
        os.environ["DAGSTER_HOME"] = str(work / "dagster_home")
        Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True)
        shutil.copyfile(ROOT / "dagster.yaml", Path(os.environ["DAGSTER_HOME"]) / "dagster.yaml")
        input_dir = work / "input"
        input_dir.mkdir()
        records = corpus_records(json.loads(corpus_file.read_text(encoding="utf-8")))
        (input_dir / corpus_file.name).write_text(json.dumps(records), encoding="utf-8")

        from assets.launch import run_index
        from pipeline.io.store import NamespaceStore

        t = time.perf_counter()
        result = run_index("bench", input_dir=str(input_dir))
        index_s = time.perf_counter() - t
        if not result.success:
            print(json.dumps({"error": result.failures}))
            return 1
        out: dict = {
            "dataset": args.dataset.name,
            "passages": len(records),
            "index_s": round(index_s, 1),
            "target_s": TARGET_S,
            "stage_s": {s.asset: s.metadata.get("duration_s") for s in result.steps},
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        texts = embedded_texts(NamespaceStore(work / "storage", "bench"))
        out["embedded_texts"] = len(texts)
        sample = random.Random(0).sample(texts, min(args.sample, len(texts)))
        out["embedding"] = embedding_speed(sample, work)
        print(json.dumps(out, indent=2))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
