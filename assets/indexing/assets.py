"""Indexing assets: documents -> text units -> text-unit embeddings (LanceDB), per namespace."""

import time
import warnings
from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    asset,
)

from assets.indexing.observe import standard_metadata
from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline import schema
from pipeline.chunking import chunk_documents_table, offset_mismatches
from pipeline.incremental import diff_documents, unit_delta
from pipeline.ingest import IngestOptions, documents_table, errors_table, read_documents
from pipeline.namespace import validate_namespace
from pipeline.vectors import index_text_units, vector_ids

GROUP = "indexing"
# A namespace-level asset reads every shard of its own namespace. The mapping is marked beta; its
# warning would be printed by every CLI command that loads the definitions.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    BY_NAMESPACE = MultiToSingleDimensionPartitionMapping(partition_dimension_name="namespace")


class DocumentsConfig(Config):
    input_dir: str | None = None
    """Folder holding this namespace's documents; default <input_root>/<namespace>/."""


def _md_table(rows: list[dict], columns: list[str], limit: int = 50) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows[:limit]:
        lines.append("| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in columns) + " |")
    if len(rows) > limit:
        lines.append(f"\n... and {len(rows) - limit} more")
    return "\n".join(lines)


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    description="Documents read from the namespace's input folder; id = sha256 of the text. Bad files go to ingest_errors.",
    kinds={"parquet"},
)
def documents(
    context: AssetExecutionContext, config: DocumentsConfig, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    namespace = validate_namespace(context.partition_key)
    settings = pipeline_settings.get_settings()
    folder = Path(config.input_dir) if config.input_dir else settings.input_root / namespace
    context.log.info(f"reading documents for namespace {namespace!r} from {folder}")
    result = read_documents(
        folder,
        IngestOptions(
            max_document_bytes=settings.max_document_bytes,
            fallback_encodings=tuple(settings.fallback_encodings),
            id_column=settings.id_column,
            title_column=settings.title_column,
            text_column=settings.text_column,
        ),
    )
    for err in result.errors:
        where = err.source_path + (f" row {err.row}" if err.row is not None else "")
        context.log.warning(f"skipped {where}: {err.error_type}: {err.reason}")
    store = pipeline_settings.store(namespace)
    docs = documents_table(result.documents)
    previous = (
        store.read_table(schema.DOCUMENTS, ["id", "source_path", "title"])
        if store.has_table(schema.DOCUMENTS)
        else None
    )
    delta = diff_documents(previous, docs)
    store.write_table(schema.DOCUMENTS, docs)
    store.write_table(schema.INGEST_ERRORS, errors_table(result.errors))
    return MaterializeResult(
        metadata={
            **standard_metadata(started, len(result.documents)),
            **delta.as_metadata(),
            "documents": len(result.documents),
            "errors": len(result.errors),
            "duplicates_skipped": result.duplicates,
            "bytes": sum(d.n_bytes for d in result.documents),
            "input_dir": str(folder),
            "duration_s": round(time.monotonic() - started, 3),
            "ingest_errors": MetadataValue.md(
                _md_table([e.__dict__ for e in result.errors], ["source_path", "row", "error_type", "reason"])
                if result.errors
                else "No errors."
            ),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[documents],
    description="Token-window chunks of each document with exact character offsets (GraphRAG text_units).",
    kinds={"parquet"},
)
def text_units(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    docs = store.read_table(schema.DOCUMENTS)
    previous = store.read_table(schema.TEXT_UNITS, ["id"]) if store.has_table(schema.TEXT_UNITS) else None
    units, docs = chunk_documents_table(docs, settings.chunk_size, settings.chunk_overlap, settings.encoding)
    store.write_table(schema.TEXT_UNITS, units)
    store.write_table(schema.DOCUMENTS, docs)  # documents gain text_unit_ids
    n_tokens = units.column("n_tokens").to_pylist()
    before = previous.column("id").to_pylist() if previous is not None else []
    return MaterializeResult(
        metadata={
            **standard_metadata(started, units.num_rows),
            **unit_delta(before, units.column("id").to_pylist()),
            "text_units": units.num_rows,
            "documents": docs.num_rows,
            "tokens": sum(n_tokens),
            "max_tokens": max(n_tokens, default=0),
            "chunk_size": settings.chunk_size,
            "chunk_overlap": settings.chunk_overlap,
            "encoding": settings.encoding,
            "duration_s": round(time.monotonic() - started, 3),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[text_units, AssetDep("text_unit_embeddings_shard", partition_mapping=BY_NAMESPACE)],
    description="LanceDB table `text_units`: text, document id, offsets and vector, with a full-text index.",
    kinds={"lancedb"},
    check_specs=[
        AssetCheckSpec("every_text_unit_has_vector", asset="text_unit_embeddings"),
        AssetCheckSpec("offsets_round_trip", asset="text_unit_embeddings"),
    ],
)
def text_unit_embeddings(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    started = time.monotonic()
    store = pipeline_settings.store(context.partition_key)
    units = store.read_table(schema.TEXT_UNITS)
    docs = store.read_table(schema.DOCUMENTS)
    cached = embedder.get_embedder()
    context.log.info(f"embedding {units.num_rows} text units with {cached.model_id}")

    def progress(done: int, total: int) -> None:
        context.log.info(f"embedded {done}/{total} new text units")

    stats = index_text_units(store, units, docs, cached, progress=progress)

    ids, bad_vectors = vector_ids(store)
    missing = set(units.column("id").to_pylist()) - set(ids)
    mismatched = offset_mismatches(docs, units)
    return MaterializeResult(
        metadata={
            **standard_metadata(started, stats.rows),
            "pieces": stats.pieces,
            "embeddings_computed": stats.embedded,
            "embedding_cache_hits": stats.cache_hits,
            "dimension": stats.dimension,
            "model": cached.model_id,
            "lancedb_uri": str(store.lance_uri),
            "duration_s": round(time.monotonic() - started, 3),
        },
        check_results=[
            AssetCheckResult(
                check_name="every_text_unit_has_vector",
                passed=not missing and bad_vectors == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"missing": len(missing), "invalid_vectors": bad_vectors},
            ),
            AssetCheckResult(
                check_name="offsets_round_trip",
                passed=not mismatched,
                severity=AssetCheckSeverity.ERROR,
                metadata={"mismatched": len(mismatched), "examples": ", ".join(mismatched[:5])},
            ),
        ],
    )


indexing_assets = [documents, text_units, text_unit_embeddings]
