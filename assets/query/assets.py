"""Query-time assets: saved global and local questions answered after every re-index.

Each stage is its own asset so its rows can be inspected in the UI: the token-budgeted batches, the
map answers (one row per batch and question: its scored points and status), the reduced answers, and the
local answers with their evidence. The work is in pipeline.query.saved_questions.
"""

import functools
import json
import time
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AutomationCondition,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)

from assets.indexing.observe import step_engine, written_table
from assets.partitions import namespace_partitions
from assets.query.config import config_of, options_of
from assets.resources import LLM_POOL, EmbedderResource, PipelineSettingsResource
from pipeline.query import registry
from pipeline.query.auto.saved import write_auto_answers
from pipeline.query.global_.search import GlobalSearchConfig
from pipeline.query.lazy.saved import write_lazy_answers
from pipeline.query.questions import DEFAULT_GLOBAL_QUESTIONS, load_questions
from pipeline.query.saved_questions import (
    AnswersTable,
    count,
    write_basic_answers,
    write_drift_answers,
    write_global_answers,
    write_global_batches,
    write_global_map_answers,
    write_local_answers,
)
from pipeline.runtime import report_writer

GROUP = "query"
# Declarative automation: answers refresh after a re-index changes what they read (the automation
# sensor runs in the Dagster daemon; the saved questions come from each asset's default config).
REFRESH = AutomationCondition.eager()
# Each asset's run config: its mode's request model's options (`assets.query.config`) beside the questions.
GlobalQuestionsConfig = config_of("global")
LocalQuestionsConfig = config_of("local")
DriftQuestionsConfig = config_of("drift")
BasicQuestionsConfig = config_of("basic")
LazyQuestionsConfig = config_of("lazy")
AutoQuestionsConfig = config_of("auto")


def _config(mode: str, cfg: Config, settings: Any) -> Any:
    """Mode `mode`'s search config: the run config's options over the configured defaults."""
    return registry.configure(mode, settings, options_of(cfg, registry.mode(mode).options).given())


def _global_config(cfg: Config, settings: PipelineSettingsResource) -> GlobalSearchConfig:
    return _config("global", cfg, settings.get_settings())


def _answer_saved(
    context: AssetExecutionContext,
    config: Config,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
    mode: str,
    write: Any,
) -> tuple[Any, Any, Any, float]:
    """What every saved-answer asset does first: this step's engine, the namespace's store, the saved
    questions, the mode's config from the run config; then `write` answers them into the mode's table."""
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    engine = step_engine(context, settings)
    store = pipeline_settings.store(context.partition_key)
    questions = load_questions(
        config.questions, config.questions_file, default=tuple(pipeline_settings.saved_questions or ())
    )
    cfg = _config(mode, config, settings)
    return write(store, questions, engine, embedder.get_embedder(), cfg), engine, cfg, started


def _elapsed(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _statuses(answers: AnswersTable) -> dict[str, int]:
    return {s: count(answers.table, "status", s) for s in ("completed", "partial", "no_results")}


def _answered(answers: AnswersTable, engine: Any, started: float, **extra: Any) -> MaterializeResult:
    """A saved-questions asset's metadata: the questions, `extra`, the answers, the model usage, the time."""
    return MaterializeResult(
        metadata={
            "questions": answers.table.num_rows,
            **extra,
            "answers": MetadataValue.md(answers.markdown),
            **engine.usage.as_metadata(),
            "duration_s": _elapsed(started),
            **written_table(answers.table),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("report_embeddings")],
    automation_condition=REFRESH,
    description="Token-budgeted batches of community reports for each saved global question (on a large "
    "namespace, the reports dynamic selection rated relevant).",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def global_map_batches(
    context: AssetExecutionContext,
    config: GlobalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    engine = step_engine(context, settings)
    store = pipeline_settings.store(context.partition_key)
    questions = load_questions(
        config.questions,
        config.questions_file,
        default=tuple(pipeline_settings.saved_questions or ()) or DEFAULT_GLOBAL_QUESTIONS,
    )
    table, selection = write_global_batches(
        store,
        questions,
        engine,
        embedder.get_embedder(),
        _config("global", config, settings),
        write_reports=report_writer(settings),  # stand-ins the batches hold are written on first use
    )
    return MaterializeResult(
        metadata={
            "questions": len(questions),
            "batches": table.num_rows,
            "tokens": sum(table.column("tokens").to_pylist()),
            **{f"selection_{k}": v for k, v in selection.items()},
            **engine.usage.as_metadata(),
            "config": json.dumps(config.model_dump()),
            "duration_s": _elapsed(started),
            **written_table(table),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[global_map_batches],
    automation_condition=REFRESH,
    description="One map answer per batch and question: its points, each scored 0-100 and citing communities.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def global_map_answers(
    context: AssetExecutionContext,
    config: GlobalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    engine = step_engine(context, pipeline_settings.get_settings())
    store = pipeline_settings.store(context.partition_key)
    table = write_global_map_answers(
        store,
        engine,
        embedder.get_embedder(),
        _global_config(config, pipeline_settings),
        log=context.log.info,
    )
    return MaterializeResult(
        metadata={
            "map_answers": table.num_rows,
            "failed": count(table, "status", "failed"),
            "with_points": sum(1 for p in table.column("points").to_pylist() if p),
            "points": sum(len(p or []) for p in table.column("points").to_pylist()),
            "dropped_points": sum(table.column("dropped_points").to_pylist()),
            "top_score": max(table.column("top_score").to_pylist(), default=0.0),
            **engine.usage.as_metadata(),
            "duration_s": _elapsed(started),
            **written_table(table),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[global_map_answers],
    automation_condition=REFRESH,
    description="The reduced answer per question, with status and cited communities.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def global_answers(
    context: AssetExecutionContext,
    config: GlobalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    engine = step_engine(context, pipeline_settings.get_settings())
    store = pipeline_settings.store(context.partition_key)
    answers = write_global_answers(
        store, engine, embedder.get_embedder(), _global_config(config, pipeline_settings)
    )
    return _answered(
        answers,
        engine,
        started,
        **_statuses(answers),
        points_used=sum(answers.table.column("points_used").to_pylist()),
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("report_embeddings")],
    automation_condition=REFRESH,
    description="Saved local questions answered with ranked communities and evidence cited to document offsets.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def local_answers(
    context: AssetExecutionContext,
    config: LocalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    answers, engine, cfg, started = _answer_saved(
        context, config, pipeline_settings, embedder, "local", write_local_answers
    )
    return _answered(answers, engine, started)


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("report_embeddings")],
    automation_condition=REFRESH,
    description="Saved DRIFT questions: primer over reports, follow-up local searches, reduce; the tree kept.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def drift_answers(
    context: AssetExecutionContext,
    config: DriftQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    answers, engine, cfg, started = _answer_saved(
        context, config, pipeline_settings, embedder, "drift", write_drift_answers
    )
    return _answered(
        answers,
        engine,
        started,
        **_statuses(answers),
        model_calls=sum(answers.table.column("model_calls").to_pylist()),
        max_calls_per_question=cfg.max_calls,
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("text_unit_embeddings")],
    automation_condition=REFRESH,
    description="Saved basic questions: the nearest passages by embedding answered with citations.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def basic_answers(
    context: AssetExecutionContext,
    config: BasicQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    answers, engine, cfg, started = _answer_saved(
        context, config, pipeline_settings, embedder, "basic", write_basic_answers
    )
    return _answered(answers, engine, started)


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("text_unit_embeddings"), AssetKey("communities")],
    automation_condition=REFRESH,
    description="Saved lazy questions: relevance tests of passages in community order within a budget, "
    "answered with citations; no community reports needed.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def lazy_answers(
    context: AssetExecutionContext,
    config: LazyQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    answers, engine, cfg, started = _answer_saved(
        context, config, pipeline_settings, embedder, "lazy", write_lazy_answers
    )
    return _answered(
        answers,
        engine,
        started,
        **_statuses(answers),
        units_tested=sum(answers.table.column("units_tested").to_pylist()),
        model_calls=sum(answers.table.column("model_calls").to_pylist()),
        max_calls_per_question=cfg.max_calls,
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("text_unit_embeddings"), AssetKey("communities")],
    automation_condition=REFRESH,
    description="Saved questions, each routed to basic, local, global, DRIFT or lazy search; the route "
    "and its reason kept with the answer.",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def auto_answers(
    context: AssetExecutionContext,
    config: AutoQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    (answers, routes), engine, cfg, started = _answer_saved(
        context,
        config,
        pipeline_settings,
        embedder,
        "auto",
        functools.partial(write_auto_answers, modes=registry.MODES),
    )
    decisions = [
        {"question": q, "route": r, "reason": why}
        for q, r, why in zip(
            answers.table.column("question").to_pylist(),
            answers.table.column("route").to_pylist(),
            answers.table.column("reason").to_pylist(),
            strict=True,
        )
    ]
    return _answered(
        answers,
        engine,
        started,
        **_statuses(answers),
        **{f"route_{r}": n for r, n in routes.items()},
        routes=MetadataValue.json(decisions),
    )


query_assets = [
    global_map_batches,
    global_map_answers,
    global_answers,
    local_answers,
    drift_answers,
    basic_answers,
    lazy_answers,
    auto_answers,
]
