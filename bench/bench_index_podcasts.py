"""Index the GraphRAG paper's podcast corpus (1,669 transcript chunks) with the offline engine; prints JSON.

    .venv/bin/python bench/bench_index_podcasts.py [--zip PATH] [--chunk-size 1200] [--chunk-overlap 100]
                                                    [--no-embed] [--keep DIR]

Runs the pipeline functions the Dagster assets call, stage by stage, and reports the time of each
stage, the graph's size, communities per level, report statistics, and the cost of a second report run
over the unchanged graph (every report reused by fingerprint). `--no-embed` skips the MiniLM stages
(text units, reports, entities), which dominate on a small CPU.

For reference, the paper (Edge et al. 2024, 600-token chunks, GPT-4-turbo extraction) reports 8,564
nodes, 20,691 edges, 34 / 367 / 969 / 1,310 communities at levels C0-C3, and 281 minutes of indexing.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core import schema  # noqa: E402
from pipeline.engine.offline import OfflineEngine  # noqa: E402
from pipeline.index.claims import index_claims  # noqa: E402
from pipeline.index.communities import index_communities  # noqa: E402
from pipeline.index.community_reports import index_community_reports  # noqa: E402
from pipeline.index.entities_and_relationships import index_entities  # noqa: E402
from pipeline.index.extracted_graph import index_extracted_graph  # noqa: E402
from pipeline.index.report_embeddings import index_report_embeddings  # noqa: E402
from pipeline.index.text_unit_embeddings import index_text_units  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.ops.chunking import chunk_documents_table  # noqa: E402
from pipeline.ops.communities import level_summary  # noqa: E402
from pipeline.ops.ingest import documents_table, read_documents  # noqa: E402
from pipeline.runtime import cached_embedder  # noqa: E402
from pipeline.settings import Settings  # noqa: E402

DEFAULT_ZIP = (
    ROOT.parent / "shared" / "data" / "graphrag_podcasts" / "kevin_scott_podcast_transcripts_input_text.zip"
)
PAPER = {
    "nodes": 8564,
    "edges": 20691,
    "communities_per_level": {"C0": 34, "C1": 367, "C2": 969, "C3": 1310},
    "indexing_minutes": 281,
    "extraction": "gpt-4-turbo, 600-token chunks, 100 overlap",
}


def _timed(stages: dict, name: str, fn):  # noqa: ANN001, ANN202
    started = time.perf_counter()
    result = fn()
    stages[name] = round(time.perf_counter() - started, 3)
    print(f"{name}: {stages[name]}s", file=sys.stderr, flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zip", type=Path, default=DEFAULT_ZIP)
    # The zip already holds the paper's 600-token chunks (one per file); 1200 keeps each one text unit.
    parser.add_argument("--chunk-size", type=int, default=1200)
    parser.add_argument("--chunk-overlap", type=int, default=100)
    parser.add_argument("--no-embed", action="store_true", help="skip the MiniLM embedding stages")
    parser.add_argument("--keep", type=Path, help="build here and keep it, instead of a temp folder")
    args = parser.parse_args()

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_podcasts_"))
    try:
        input_dir = work / "input"
        with zipfile.ZipFile(args.zip) as z:
            z.extractall(input_dir)
        settings = Settings(
            storage_root=work / "storage", chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap
        )
        store = NamespaceStore(settings.storage_root, "podcasts")
        engine = OfflineEngine()
        stages: dict[str, float] = {}

        def ingest():  # noqa: ANN202
            docs = documents_table(read_documents(input_dir).documents)
            store.write_table(schema.DOCUMENTS, docs)
            return docs

        docs = _timed(stages, "ingest", ingest)

        def chunk():  # noqa: ANN202
            units, linked, _ = chunk_documents_table(
                docs, settings.chunk_size, settings.chunk_overlap, settings.encoding
            )
            store.write_table(schema.TEXT_UNITS, units)
            store.write_table(schema.DOCUMENTS, linked)
            return units, linked

        units, docs = _timed(stages, "chunking", chunk)
        extraction = _timed(stages, "extraction", lambda: index_extracted_graph(store, settings, engine))
        entities = _timed(stages, "entities_relationships", lambda: index_entities(store, settings, engine))
        claims = _timed(stages, "claims", lambda: index_claims(store))
        communities = _timed(stages, "communities", lambda: index_communities(store, settings))
        reports = _timed(
            stages, "community_reports", lambda: index_community_reports(store, settings, engine)
        )
        rerun = _timed(
            stages,
            "community_reports_rerun_unchanged",
            lambda: index_community_reports(store, settings, engine),
        )

        embeddings: dict = {}
        if not args.no_embed:
            embedder = cached_embedder(settings)
            _timed(stages, "embedding_model_load", lambda: embedder.embedder.embed(["warm up"]))
            unit_stats = _timed(
                stages, "text_unit_embeddings", lambda: index_text_units(store, units, docs, embedder)
            )
            report_stats, entity_stats = _timed(
                stages, "report_and_entity_embeddings", lambda: index_report_embeddings(store, embedder)
            )
            embeddings = {
                "text_unit_pieces_embedded": unit_stats.embedded,
                "reports": report_stats.__dict__,
                "entities": entity_stats.__dict__,
            }

        levels = level_summary(store.read_table(schema.COMMUNITIES))
        tokens = reports.reports.column("context_tokens").to_pylist()
        out = {
            "corpus": str(args.zip),
            "engine": "offline",
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
            "documents": docs.num_rows,
            "text_units": units.num_rows,
            "tokens": sum(units.column("n_tokens").to_pylist()),
            "extraction": extraction.counts,
            "entities": entities.stats.entities,
            "relationships": entities.stats.relationships,
            "claims": claims.stats.claims,
            "communities": communities.communities,
            "communities_per_level": {f"C{lv}": int(s["communities"]) for lv, s in levels.items()},
            "community_sizes_per_level": {f"C{lv}": s for lv, s in levels.items()},
            "reports": {
                "generated": reports.generated,
                "from_sub_reports": reports.substituted,
                "failed": len(reports.failures),
                "max_context_tokens": max(tokens, default=0),
                "mean_context_tokens": round(sum(tokens) / max(len(tokens), 1), 1),
                "rerun_reused": rerun.reused,
                "rerun_generated": rerun.generated,
            },
            "embeddings": embeddings,
            "stage_seconds": stages,
            "total_seconds": round(
                sum(v for k, v in stages.items() if k != "community_reports_rerun_unchanged"), 3
            ),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "paper": PAPER,
        }
        print(json.dumps(out, indent=2, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
