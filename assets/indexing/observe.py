"""A runner's `StageReport` as a Dagster materialization: metadata values, asset checks, step log.

Every indexing asset reports `rows`, the LLM counters of `pipeline.llm.Usage` (`llm_calls`,
`llm_cache_hits`, tokens, `llm_cost_usd`, `llm_budget_reached`; zeros for a step that calls no model, so a
dashboard or a sum over a run never has a gap) and `duration_s`, plus its stage's own figures.

The run's LLM budget (`PIPELINE_LLM_BUDGET_USD`, `pipeline.llm.budget`) is shared by its steps through
those figures: a step's engine starts from the `llm_cost_usd` the run's materializations recorded so
far (the event log every process and machine of the instance shares) and adds its own spend as it goes.
Steps of one run that call the model at the same time do not see each other's spend until they finish.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    DagsterEventType,
    MaterializeResult,
    MetadataValue,
)

from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.engine.base import Engine
from pipeline.index.context import IndexContext
from pipeline.index.report import Json, Markdown, PathValue, StageReport
from pipeline.runtime import make_engine
from pipeline.settings import Settings


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
        spent_usd=run_llm_spend(context) if settings.llm_budget_usd is not None else 0.0,
        embedder=embedder.get_embedder() if embedder is not None else None,
        log=context.log.info,
    )


def run_llm_spend(context: AssetExecutionContext) -> float:
    """USD the run's materializations so far recorded as `llm_cost_usd` (its earlier steps' spend)."""
    records = context.instance.get_records_for_run(
        context.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
    ).records
    spent = 0.0
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        value = materialization.metadata.get("llm_cost_usd") if materialization else None
        spent += float(getattr(value, "value", value) or 0.0)
    return spent


def step_engine(context: AssetExecutionContext, settings: Settings) -> Engine:
    """This step's engine, its LLM budget (if one is set) counting what the run spent before it; the
    event log is read only when a budget is set."""
    budgeted = settings.llm_budget_usd is not None
    return make_engine(settings, spent_usd=run_llm_spend(context) if budgeted else 0.0)


def _value(value: Any) -> Any:
    if isinstance(value, Markdown):
        return MetadataValue.md(value.text)
    if isinstance(value, Json):
        return MetadataValue.json(value.value)
    if isinstance(value, PathValue):
        return MetadataValue.path(value.path)
    return value


def materialize(
    report: StageReport, asset_key: AssetKey | None = None, *, ctx: IndexContext | None = None
) -> MaterializeResult:
    """The report as a materialization; `ctx` adds the indexing method every asset shows."""
    method = ctx.method_metadata() if ctx is not None else {}
    return MaterializeResult(
        asset_key=asset_key,
        metadata={k: _value(v) for k, v in {**report.all_metadata(), **method}.items()},
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
