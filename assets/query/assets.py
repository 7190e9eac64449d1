"""Query-time assets: saved global and local questions answered after every re-index.

Each stage is its own asset so its rows can be inspected in the UI: the token-budgeted batches, the
map answers (one per batch and question, with usefulness and status), the reduced answers, and the
local answers with their evidence. The work is in pipeline.query.saved_questions.
"""

import json
import time

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AutomationCondition,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)

from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.query.global_search import GlobalSearchConfig
from pipeline.query.local_search import LocalSearchConfig
from pipeline.query.questions import load_questions
from pipeline.query.saved_questions import (
    count,
    write_global_answers,
    write_global_batches,
    write_global_map_answers,
    write_local_answers,
)

GROUP = "query"
# Declarative automation: answers refresh after a re-index changes what they read (the automation
# sensor runs in the Dagster daemon; the saved questions come from each asset's default config).
REFRESH = AutomationCondition.eager()


class GlobalQuestionsConfig(Config):
    questions: list[str] = []
    """Questions to answer; with none here and no file, a default 'main themes' question."""
    questions_file: str | None = None
    """A text file (one question per line) or a CSV with a 'question' column."""
    level: int | None = None
    """Community level of the reports (default: leaf communities)."""
    seed: int = 0
    """Shuffle seed for the batches (fixed so a run is reproducible)."""


class LocalQuestionsConfig(Config):
    questions: list[str] = []
    """Questions about specific entities; with none here and no file, nothing is asked."""
    questions_file: str | None = None
    top_k: int = 8
    level: int | None = None


def _global_config(cfg: GlobalQuestionsConfig) -> GlobalSearchConfig:
    return GlobalSearchConfig(level=cfg.level, seed=cfg.seed)


def _elapsed(started: float) -> float:
    return round(time.monotonic() - started, 3)


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("report_embeddings")],
    automation_condition=REFRESH,
    description="Token-budgeted batches of community reports for each saved global question.",
    kinds={"parquet"},
)
def global_map_batches(
    context: AssetExecutionContext, config: GlobalQuestionsConfig, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    store = pipeline_settings.store(context.partition_key)
    questions = load_questions(config.questions, config.questions_file)
    table = write_global_batches(store, questions, _global_config(config))
    return MaterializeResult(
        metadata={
            "questions": len(questions),
            "batches": table.num_rows,
            "tokens": sum(table.column("tokens").to_pylist()),
            "config": json.dumps(config.model_dump()),
            "duration_s": _elapsed(started),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[global_map_batches],
    automation_condition=REFRESH,
    description="One map answer per batch and question, with usefulness (0-100) and status.",
    kinds={"parquet"},
)
def global_map_answers(
    context: AssetExecutionContext,
    config: GlobalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    engine = pipeline_settings.engine()
    store = pipeline_settings.store(context.partition_key)
    table = write_global_map_answers(
        store, engine, embedder.get_embedder(), _global_config(config), log=context.log.info
    )
    return MaterializeResult(
        metadata={
            "map_answers": table.num_rows,
            "failed": count(table, "status", "failed"),
            "useful": sum(1 for u in table.column("usefulness").to_pylist() if u > 0),
            **engine.usage.as_metadata(),
            "duration_s": _elapsed(started),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[global_map_answers],
    automation_condition=REFRESH,
    description="The reduced answer per question, with status and cited communities.",
    kinds={"parquet"},
)
def global_answers(
    context: AssetExecutionContext,
    config: GlobalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    engine = pipeline_settings.engine()
    store = pipeline_settings.store(context.partition_key)
    answers = write_global_answers(store, engine, embedder.get_embedder(), _global_config(config))
    return MaterializeResult(
        metadata={
            "questions": answers.table.num_rows,
            **{s: count(answers.table, "status", s) for s in ("completed", "partial", "no_results")},
            "answers": MetadataValue.md(answers.markdown),
            **engine.usage.as_metadata(),
            "duration_s": _elapsed(started),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[AssetKey("report_embeddings")],
    automation_condition=REFRESH,
    description="Saved local questions answered with ranked communities and evidence cited to document offsets.",
    kinds={"parquet"},
)
def local_answers(
    context: AssetExecutionContext,
    config: LocalQuestionsConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    engine = pipeline_settings.engine()
    store = pipeline_settings.store(context.partition_key)
    questions = load_questions(config.questions, config.questions_file, default=())
    cfg = LocalSearchConfig(top_k=config.top_k, community_level=config.level)
    answers = write_local_answers(store, questions, engine, embedder.get_embedder(), cfg)
    return MaterializeResult(
        metadata={
            "questions": answers.table.num_rows,
            "answers": MetadataValue.md(answers.markdown),
            **engine.usage.as_metadata(),
            "duration_s": _elapsed(started),
        }
    )


query_assets = [global_map_batches, global_map_answers, global_answers, local_answers]
