"""Report assets: communities -> community reports (Parquet) -> report and entity embeddings (LanceDB)."""

import time

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
    asset,
)

from assets.indexing.assets import GROUP, _md_table
from assets.indexing.observe import standard_metadata
from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline import schema
from pipeline.llm import make_engine
from pipeline.report_index import index_report_embeddings
from pipeline.reports.build import index_community_reports
from pipeline.vectors import vector_ids


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("communities"), AssetKey("claims")],
    description=(
        "One report per community (GraphRAG's community_reports columns + fingerprint), written bottom-up: "
        "a community over the context budget stands on its sub-communities' reports. An unchanged "
        "fingerprint reuses the stored report without an engine call; failures go to failed_reports."
    ),
    kinds={"parquet"},
    check_specs=[
        AssetCheckSpec("no_failed_reports", asset="community_reports"),
        AssetCheckSpec("one_report_per_community", asset="community_reports"),
    ],
)
def community_reports(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    engine = make_engine(settings)

    def progress(level: int, done: int, total: int) -> None:
        context.log.info(f"level {level}: {done}/{total} reports")

    run = index_community_reports(store, settings, engine, progress=progress)
    for f in run.failures[:20]:
        context.log.warning(f"community {f.community} (level {f.level}): {f.error_type}: {f.reason}")
    reports = run.reports.select(["community", "level", "size", "rank", "title"]).to_pylist()
    top = sorted((r for r in reports if r["level"] == 0), key=lambda r: (-r["size"], r["community"]))
    expected = set(store.read_table(schema.COMMUNITIES, columns=["community"]).column(0).to_pylist())
    covered = {r["community"] for r in reports} | {f.community for f in run.failures}
    return MaterializeResult(
        metadata={
            **standard_metadata(started, run.reports.num_rows, engine.usage),
            "reports": run.reports.num_rows,
            "generated": run.generated,
            "reused": run.reused,
            "failed": len(run.failures),
            "from_sub_reports": run.substituted,
            "method": run.method,
            "model": run.model,
            "context_budget_tokens": settings.report_max_input_tokens,
            "per_level": MetadataValue.md(
                _md_table(
                    [{"level": lv, **s} for lv, s in run.per_level.items()],
                    ["level", "communities", "generated", "reused", "failed", "substituted"],
                )
            ),
            "top_level": MetadataValue.md(_md_table(top, ["community", "size", "rank", "title"], limit=30)),
            "failures": MetadataValue.md(
                _md_table([f.__dict__ for f in run.failures], ["community", "level", "error_type", "reason"])
                if run.failures
                else "No failures."
            ),
        },
        check_results=[
            AssetCheckResult(
                check_name="no_failed_reports",
                passed=not run.failures,
                severity=AssetCheckSeverity.WARN,
                metadata={"failed_reports": len(run.failures)},
            ),
            AssetCheckResult(
                check_name="one_report_per_community",
                passed=covered == expected and len(reports) == len({r["community"] for r in reports}),
                severity=AssetCheckSeverity.ERROR,
                metadata={"missing": len(expected - covered), "unknown": len(covered - expected)},
            ),
        ],
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[community_reports, AssetKey("entities")],
    description=(
        "LanceDB tables `community_reports` (vector of full_content) and `entities` (vector of "
        "'title: description'), with full-text indexes; only changed rows are embedded again."
    ),
    kinds={"lancedb"},
    check_specs=[AssetCheckSpec("every_row_has_vector", asset="report_embeddings")],
)
def report_embeddings(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    started = time.monotonic()
    store = pipeline_settings.store(context.partition_key)
    cached = embedder.get_embedder()

    def progress(done: int, total: int) -> None:
        context.log.info(f"embedded {done}/{total} new texts")

    reports, entities = index_report_embeddings(store, cached, progress=progress)
    bad = {}
    for stats in (reports, entities):
        ids, invalid = vector_ids(store, stats.table)
        bad[stats.table] = invalid + (stats.rows - len(ids))
    metadata = {"model": cached.model_id, "dimension": cached.dimension, "lancedb_uri": str(store.lance_uri)}
    for prefix, stats in (("reports", reports), ("entities", entities)):
        metadata.update(
            {
                f"{prefix}_rows": stats.rows,
                f"{prefix}_vectors_kept": stats.carried_over,
                f"{prefix}_rows_embedded": stats.embedded_rows,
                f"{prefix}_embeddings_computed": stats.embeddings_computed,
                f"{prefix}_embedding_cache_hits": stats.cache_hits,
            }
        )
    return MaterializeResult(
        metadata={**standard_metadata(started, reports.rows + entities.rows), **metadata},
        check_results=[
            AssetCheckResult(
                check_name="every_row_has_vector",
                passed=not any(bad.values()),
                severity=AssetCheckSeverity.ERROR,
                metadata={f"{table}_without_vector": n for table, n in bad.items()},
            )
        ],
    )


report_assets = [community_reports, report_embeddings]
