"""Index a folder from plain Python, no Dagster: the runners of every indexing asset, in the order of
the `index_namespace` job.

    from pipeline.index.run import index_folder
    reports = index_folder("books", "path/to/folder")      # {asset name: StageReport}

Dagster adds what a batch platform adds (run history, partitions, retries, the UI, schedules, sensors,
scale-out); the tables written are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.index import (
    base_text_units,
    chunk_graph,
    claims,
    communities,
    community_reports,
    documents,
    entities_and_relationships,
    extracted_graph,
    input_documents,
    report_embeddings,
    text_unit_embeddings,
    text_units,
    version,
)
from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport
from pipeline.io.repair import clear_damage
from pipeline.settings import Settings, load_settings


class IndexRunError(RuntimeError):
    """A stage's error check failed; the message names the stage and the check."""


def index_folder(
    namespace: str,
    input_dir: str | Path | None = None,
    *,
    settings: Settings | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, StageReport]:
    """Run every indexing stage for `namespace` on `input_dir` (default `<input_root>/<namespace>/`).

    Stops with IndexRunError when a stage's error-severity check fails, or an LLM stage lost all or more
    than `llm_max_failed_share` of its units (`report.Loss`), as the Dagster job would (its downstream
    assets would not run)."""
    ctx = IndexContext.build(namespace, settings or load_settings(), log=log)
    reports: dict[str, StageReport] = {}
    clear_damage(ctx.store, log)  # a damaged table is removed: its stage rebuilds it from its inputs

    def record(name: str, report: StageReport) -> None:
        reports[name] = report
        log(f"{name}: {report.rows} rows in {report.duration_s:.1f}s")
        failed = [c.name for c in report.checks if not c.passed and c.severity == "error"]
        if failed:
            raise IndexRunError(f"{name}: check(s) failed: {', '.join(failed)}")
        if (lost := report.fatal_loss()) is not None:
            raise IndexRunError(lost)

    record("input_documents", input_documents.run(ctx, input_dir))
    record("base_text_units", base_text_units.run(ctx))
    record("documents", documents.run(ctx))
    record("text_unit_embeddings", text_unit_embeddings.run(ctx))
    record("extracted_graph", extracted_graph.run(ctx))
    for name, report in entities_and_relationships.run(ctx).items():
        record(name, report)
    record("claims", claims.run(ctx))
    record("text_units", text_units.run(ctx))
    record("communities", communities.run(ctx))
    record("community_reports", community_reports.run(ctx))
    record("report_embeddings", report_embeddings.run(ctx))
    record("chunk_graph", chunk_graph.run(ctx))
    version.run(ctx)  # every table is written: queries move to this version, all at once
    return reports
