"""A runner's `StageReport` as a Dagster materialization: metadata values, asset checks, step log.

Every indexing asset reports `rows`, the LLM counters of `pipeline.llm.Usage` (`llm_calls`,
`llm_cache_hits`, tokens, `llm_cost_usd`; zeros for a step that calls no model, so a dashboard or a
sum over a run never has a gap) and `duration_s`, plus its stage's own figures.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    MaterializeResult,
    MetadataValue,
)

from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.index.context import IndexContext
from pipeline.index.report import Json, Markdown, PathValue, StageReport


def index_context(
    context: AssetExecutionContext,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource | None = None,
    namespace: str | None = None,
) -> IndexContext:
    """The runner's context for this step's namespace, logging to the step's log."""
    settings = pipeline_settings.get_settings()
    return IndexContext.build(
        namespace or context.partition_key,
        settings,
        engine=pipeline_settings.engine(),
        embedder=embedder.get_embedder() if embedder is not None else None,
        log=context.log.info,
    )


def _value(value: Any) -> Any:
    if isinstance(value, Markdown):
        return MetadataValue.md(value.text)
    if isinstance(value, Json):
        return MetadataValue.json(value.value)
    if isinstance(value, PathValue):
        return MetadataValue.path(value.path)
    return value


def materialize(report: StageReport, asset_key: AssetKey | None = None) -> MaterializeResult:
    return MaterializeResult(
        asset_key=asset_key,
        metadata={k: _value(v) for k, v in report.all_metadata().items()},
        check_results=[
            AssetCheckResult(
                check_name=c.name,
                asset_key=asset_key,
                passed=c.passed,
                severity=AssetCheckSeverity.ERROR if c.severity == "error" else AssetCheckSeverity.WARN,
                metadata={k: _value(v) for k, v in c.metadata.items()},
            )
            for c in report.checks
        ],
    )
