"""Query-time assets: each mode's saved questions answered after every re-index.

Global search's stages are each their own asset so their rows can be inspected in the UI: the
token-budgeted batches, the map answers (one row per batch and question: its scored points and status),
the reduced answers. Every other mode with saved answers (`Mode.saved`) gets one asset, made in a loop
over the registry. The work is in pipeline.query.saved_questions.
"""

import json
import time
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
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
from pipeline.query.common.mode import Mode
from pipeline.query.global_.search import GlobalSearchConfig
from pipeline.query.questions import DEFAULT_GLOBAL_QUESTIONS, load_questions
from pipeline.query.saved_questions import (
    AnswersTable,
    count,
    write_answers,
    write_global_answers,
    write_global_batches,
    write_global_map_answers,
)
from pipeline.runtime import report_writer

GROUP = "query"
# Declarative automation: answers refresh after a re-index changes what they read (the automation
# sensor runs in the Dagster daemon; the saved questions come from each asset's default config).
REFRESH = AutomationCondition.eager()
# Each asset's run config: its mode's request model's options (`assets.query.config`) beside the questions.
GlobalQuestionsConfig = config_of("global")


def _config(mode: str, cfg: Config, settings: Any) -> Any:
    """Mode `mode`'s search config: the run config's options over the configured defaults."""
    return registry.configure(mode, settings, options_of(cfg, registry.mode(mode).options).given())


def _global_config(cfg: Config, settings: PipelineSettingsResource) -> GlobalSearchConfig:
    return _config("global", cfg, settings.get_settings())


def _begin(
    context: AssetExecutionContext,
    config: Config,
    pipeline_settings: PipelineSettingsResource,
    fallback: tuple[str, ...] = (),
) -> tuple[float, Any, Any, list[str]]:
    """What a saved-questions asset starts with: its clock, the settings, this step's engine and the
    questions (the run config's, else the configured saved questions, else `fallback`)."""
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    default = tuple(pipeline_settings.saved_questions or ()) or fallback
    questions = load_questions(config.questions, config.questions_file, default=default)
    return started, settings, step_engine(context, settings), questions


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
    started, settings, engine, questions = _begin(
        context, config, pipeline_settings, DEFAULT_GLOBAL_QUESTIONS
    )
    store = pipeline_settings.store(context.partition_key)
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


def saved_answer_asset(mode: Mode) -> AssetsDefinition:
    """The saved-answer asset of a mode with saved answers (`Mode.saved`): its saved questions answered
    through the registry after each re-index into `query_<mode>_answers`, its options in the run config."""
    saved = mode.saved
    assert saved is not None, mode.name
    QuestionsConfig = config_of(mode)  # noqa: N806 (a class, as Dagster reads it from the annotation)

    @asset(
        name=f"{mode.name}_answers",
        partitions_def=namespace_partitions,
        group_name=GROUP,
        deps=[AssetKey(d) for d in saved.deps],
        automation_condition=REFRESH,
        description=saved.description or mode.doc("saved"),
        kinds={"parquet"},
        pool=LLM_POOL,
    )
    def answers(
        context: AssetExecutionContext,
        config: QuestionsConfig,  # type: ignore[valid-type]
        pipeline_settings: PipelineSettingsResource,
        embedder: EmbedderResource,
    ) -> MaterializeResult:
        started, settings, engine, questions = _begin(context, config, pipeline_settings)
        given = options_of(config, mode.options).given()
        written = write_answers(
            mode.name,
            pipeline_settings.store(context.partition_key),
            questions,
            settings=settings,
            engine=engine,
            embedder=embedder.get_embedder(),
            given=given,
            write_reports=report_writer(settings),  # deferred reports it reads, written on first use
        )
        extra = {f"{c}": sum(written.table.column(c).to_pylist()) for c in saved.totals}
        if saved.metadata is not None:
            more = saved.metadata(written.table, registry.configure(mode.name, settings, given))
            extra |= {k: MetadataValue.json(v) if isinstance(v, list | dict) else v for k, v in more.items()}
        return _answered(written, engine, started, **_statuses(written), **extra)

    return answers


def saved_answer_assets() -> list[AssetsDefinition]:
    """One saved-answer asset per registered mode that has saved answers, in registry order (read when
    called: a mode registered later, a plug-in's, gets its asset from the next call)."""
    return [saved_answer_asset(m) for m in registry.MODES.values() if m.saved is not None]


def query_assets_of_registry() -> list[AssetsDefinition]:
    """Global search's three stages, then every other mode's saved answers."""
    return [global_map_batches, global_map_answers, global_answers, *saved_answer_assets()]


query_assets = query_assets_of_registry()


def query_asset(key: str) -> AssetsDefinition:
    """The query asset called `key` (`local_answers`, `global_map_batches`, ...)."""
    for found in query_assets:
        if found.key.to_user_string() == key:
            return found
    raise KeyError(
        f"no query asset {key!r}; they are {', '.join(a.key.to_user_string() for a in query_assets)}"
    )
