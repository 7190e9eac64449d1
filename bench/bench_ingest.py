"""Ingest + chunk + embed a corpus (default: MuSiQue's 1,890 passages); prints JSON.

    .venv/bin/python bench/bench_ingest.py [--corpus PATH] [--chunk-size N] [--chunk-overlap N]

Runs the same pipeline functions the Dagster assets call, with a fresh embedding cache, then once
more with the warm cache (what a re-index of unchanged text costs).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.caches.sqlite_embedding import EmbeddingCache  # noqa: E402
from pipeline.embeddings.cached import CachedEmbedder  # noqa: E402
from pipeline.embeddings.minilm import LocalMiniLMEmbedder  # noqa: E402
from pipeline.index.text_unit_embeddings import index_text_units  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.ops.chunking import chunk_documents_table  # noqa: E402
from pipeline.ops.ingest import documents_table, read_documents  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "musique_hipporag100" / "musique_train_corpus.json"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="a file or folder of documents")
    parser.add_argument("--chunk-size", type=int, default=1200)
    parser.add_argument("--chunk-overlap", type=int, default=100)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench_ingest_"))
    try:
        input_dir = work / "input"
        input_dir.mkdir()
        if args.corpus.is_dir():
            shutil.copytree(args.corpus, input_dir, dirs_exist_ok=True)
        else:
            shutil.copy(args.corpus, input_dir / args.corpus.name)
        store = NamespaceStore(work / "storage", "bench")
        out: dict = {
            "corpus": str(args.corpus),
            "chunk_size": args.chunk_size,
            "chunk_overlap": args.chunk_overlap,
        }

        t = time.perf_counter()
        result = read_documents(input_dir)
        docs = documents_table(result.documents)
        store.write_table("documents", docs)
        out["ingest_s"] = round(time.perf_counter() - t, 3)
        out["documents"] = docs.num_rows
        out["ingest_errors"] = len(result.errors)

        t = time.perf_counter()
        units, docs, _ = chunk_documents_table(docs, args.chunk_size, args.chunk_overlap, "o200k_base")
        store.write_table("text_units", units)
        out["chunk_s"] = round(time.perf_counter() - t, 3)
        out["text_units"] = units.num_rows
        out["tokens"] = sum(units.column("n_tokens").to_pylist())

        model = LocalMiniLMEmbedder()
        t = time.perf_counter()
        model.embed(["warm up"])
        out["model_load_s"] = round(time.perf_counter() - t, 3)
        # A cache of the benchmark's own, whatever PIPELINE_CACHE_* say: the first pass must be cold.
        cache_file = work / "cache" / "embeddings.sqlite"
        emb = CachedEmbedder(model, EmbeddingCache(cache_file))
        t = time.perf_counter()
        stats = index_text_units(store, units, docs, emb, progress=lambda d, n: None)
        out["embed_s"] = round(time.perf_counter() - t, 3)
        out["embedded_pieces"] = stats.embedded
        out["chunks_per_s_embed"] = round(units.num_rows / out["embed_s"], 1)

        warm = CachedEmbedder(model, EmbeddingCache(cache_file))
        t = time.perf_counter()
        stats2 = index_text_units(store, units, docs, warm, progress=lambda d, n: None)
        out["reembed_unchanged_s"] = round(time.perf_counter() - t, 3)
        out["reembed_unchanged_computed"] = stats2.embedded

        total = out["ingest_s"] + out["chunk_s"] + out["embed_s"]
        out["total_s"] = round(total, 3)
        out["chunks_per_s_total"] = round(units.num_rows / total, 1)
        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
