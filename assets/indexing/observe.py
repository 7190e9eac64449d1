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

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    DagsterEventType,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
)

from assets import progress
from assets.indexing.blocking import blocking_checks
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.core import schema
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
    """The runner's context for this step's namespace, logging to the step's log; its progress also
    reaches the CLI's display when the step runs under `pipeline index` (`assets.progress`)."""
    settings = pipeline_settings.get_settings()
    progress.stage_started(context.op_def.name)
    return IndexContext.build(
        namespace or context.partition_key,
        settings,
        spent_usd=run_llm_spend(context) if settings.llm_budget_usd is not None else 0.0,
        embedder=embedder.get_embedder() if embedder is not None else None,
        log=context.log.info,
        on_progress=progress.stage_advanced,
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


# What each asset writes, as its schema in `pipeline.core.schema` (LanceDB ones for the vector dimension
# the step reports): the UI shows it as the asset's columns, with `dagster/row_count`.
ASSET_SCHEMAS: dict[str, Callable[[int], pa.Schema]] = {
    "input_documents": lambda _: schema.DOCUMENTS_SCHEMA,
    "base_text_units": lambda _: schema.TEXT_UNITS_SCHEMA,
    "documents": lambda _: schema.DOCUMENTS_SCHEMA,
    "text_units": lambda _: schema.TEXT_UNITS_SCHEMA,
    "text_unit_embeddings": schema.lance_text_units_schema,
    "extracted_graph": lambda _: schema.EXTRACTED_GRAPH_SCHEMA,
    "extracted_graph_shard": lambda _: schema.EXTRACTED_GRAPH_SCHEMA,
    "entities": lambda _: schema.ENTITIES_SCHEMA,
    "relationships": lambda _: schema.RELATIONSHIPS_SCHEMA,
    "claims": lambda _: schema.COVARIATES_SCHEMA,
    "communities": lambda _: schema.COMMUNITIES_SCHEMA,
    "community_reports": lambda _: schema.COMMUNITY_REPORTS_SCHEMA,
    "report_embeddings": lambda dim: schema.lance_community_reports_schema(dim, ""),
}


def column_schema(table: pa.Schema) -> TableSchema:
    return TableSchema(columns=[TableColumn(f.name, str(f.type)) for f in table])


def written_table(table: pa.Table) -> dict[str, Any]:
    """Dagster's row count and columns of a table the step wrote (through its registered schema)."""
    return {"dagster/row_count": table.num_rows, "dagster/column_schema": column_schema(table.schema)}


def table_metadata(asset: str | None, report: StageReport) -> dict[str, Any]:
    """Dagster's own keys, which the UI renders: the row count and, when known, the columns."""
    out: dict[str, Any] = {"dagster/row_count": report.rows}
    make = ASSET_SCHEMAS.get(asset or "")
    if make is not None:
        dim = report.metadata.get("dimension")
        out["dagster/column_schema"] = column_schema(make(dim if isinstance(dim, int) and dim > 0 else 1))
    return out


def materialize(
    report: StageReport, asset_key: AssetKey | None = None, *, ctx: IndexContext | None = None
) -> MaterializeResult:
    """The step's materialization; a Failure (after the runner wrote its tables) when an LLM stage lost
    all or too many of its units (`pipeline.index.report.Loss`). `ctx` adds the indexing method every
    asset shows."""
    asset = asset_key.to_user_string() if asset_key else progress.current_stage()
    progress.asset_materialized(asset, report.all_metadata())
    method = ctx.method_metadata() if ctx is not None else {}
    blocking = blocking_checks(asset, report, ctx) if ctx is not None else []
    # A failed blocking check stops the run itself (Dagster fails the step after recording the check),
    # and its reason is readable on the asset; the Failure stays for steps no such check covers.
    if (lost := report.fatal_loss()) is not None and all(c.passed for c in blocking):
        metadata = {k: _value(v) for k, v in report.all_metadata().items()}
        raise Failure(description=lost, metadata=metadata, allow_retries=False)
    return MaterializeResult(
        asset_key=asset_key,
        metadata={
            **{k: _value(v) for k, v in {**report.all_metadata(), **method}.items()},
            **table_metadata(asset, report),
        },
        check_results=[
            AssetCheckResult(
                check_name=c.name,
                asset_key=asset_key,
                passed=c.passed,
                severity=AssetCheckSeverity.ERROR if c.severity == "error" else AssetCheckSeverity.WARN,
                metadata={k: _value(v) for k, v in c.metadata.items()},
                description=c.metadata.get("reason"),
            )
            for c in [*report.checks, *blocking]
        ],
    )
