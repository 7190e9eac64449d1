"""Query-time assets: saved global questions answered by map-reduce after every re-index.

Each stage is its own asset so its rows can be inspected in the UI: the token-budgeted batches, the
map answers (one per batch and question, with usefulness and status) and the reduced answers.
"""

import json
import time

import pyarrow as pa
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
from pipeline import schema
from pipeline.llm import make_engine
from pipeline.query.global_search import (
    GlobalSearchConfig,
    GlobalTasks,
    MapResult,
    plan_batches,
    reduce_map_results,
    run_map,
)
from pipeline.query.local_search import LocalSearchConfig, local_search_async
from pipeline.query.questions import load_questions

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


def _config(cfg: GlobalQuestionsConfig) -> GlobalSearchConfig:
    return GlobalSearchConfig(level=cfg.level, seed=cfg.seed)


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
    rows = []
    for question in questions:
        for b in plan_batches(store, question, _config(config)):
            rows.append(
                {
                    "question": question,
                    "batch": b.index,
                    "community_ids": b.community_ids,
                    "tokens": b.tokens,
                    "content": b.content,
                }
            )
    store.write_table(
        schema.QUERY_GLOBAL_BATCHES, pa.Table.from_pylist(rows, schema=schema.QUERY_GLOBAL_BATCHES_SCHEMA)
    )
    return MaterializeResult(
        metadata={
            "questions": len(questions),
            "batches": len(rows),
            "tokens": sum(r["tokens"] for r in rows),
            "config": json.dumps(config.model_dump()),
            "duration_s": round(time.monotonic() - started, 3),
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
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    batches = store.read_table(schema.QUERY_GLOBAL_BATCHES).to_pylist()
    engine = make_engine(settings)
    tasks = GlobalTasks(engine, embedder.get_embedder())
    from pipeline.query.batcher import Batch

    by_question: dict[str, list[Batch]] = {}
    for r in batches:
        by_question.setdefault(r["question"], []).append(
            Batch(r["batch"], r["content"], r["community_ids"], r["tokens"])
        )
    rows = []
    for question, qbatches in by_question.items():
        context.log.info(f"map: {len(qbatches)} batches for {question!r}")
        results = engine.run_sync(run_map(tasks, question, qbatches, _config(config)))
        rows += [
            {
                "question": question,
                "batch": m.batch,
                "community_ids": m.community_ids,
                "status": m.status,
                "usefulness": m.usefulness,
                "answer": m.answer,
                "attempts": m.attempts,
                "error": m.error,
            }
            for m in results
        ]
    store.write_table(
        schema.QUERY_GLOBAL_MAP_ANSWERS,
        pa.Table.from_pylist(rows, schema=schema.QUERY_GLOBAL_MAP_ANSWERS_SCHEMA),
    )
    return MaterializeResult(
        metadata={
            "map_answers": len(rows),
            "failed": sum(r["status"] == "failed" for r in rows),
            "useful": sum(r["usefulness"] > 0 for r in rows),
            **engine.usage.as_metadata(),
            "duration_s": round(time.monotonic() - started, 3),
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
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    engine = make_engine(settings)
    tasks = GlobalTasks(engine, embedder.get_embedder())
    n_batches: dict[str, int] = {}
    for r in store.read_table(schema.QUERY_GLOBAL_BATCHES, columns=["question"]).to_pylist():
        n_batches[r["question"]] = n_batches.get(r["question"], 0) + 1
    maps: dict[str, list[MapResult]] = {q: [] for q in n_batches}
    for r in store.read_table(schema.QUERY_GLOBAL_MAP_ANSWERS).to_pylist():
        maps.setdefault(r["question"], []).append(
            MapResult(
                r["batch"],
                r["community_ids"],
                r["status"],
                r["answer"],
                r["usefulness"],
                r["attempts"],
                r["error"],
            )
        )
    rows, md = [], []
    for question, results in maps.items():
        res = engine.run_sync(
            reduce_map_results(question, n_batches.get(question, 0), results, tasks, _config(config))
        )
        rows.append(
            {
                "question": question,
                "status": res.status,
                "answer": res.answer,
                "reason": res.reason,
                "cited_communities": res.cited_communities,
                "map_answers_used": len(res.map_answers),
                "failed_batches": len(res.failed_batches),
                "batches": res.batches,
            }
        )
        md.append(
            f"### {question}\n\n**{res.status}**"
            + (f" — {res.reason}" if res.reason else "")
            + f"\n\n{res.answer}\n"
        )
    store.write_table(
        schema.QUERY_GLOBAL_ANSWERS, pa.Table.from_pylist(rows, schema=schema.QUERY_GLOBAL_ANSWERS_SCHEMA)
    )
    return MaterializeResult(
        metadata={
            "questions": len(rows),
            "completed": sum(r["status"] == "completed" for r in rows),
            "partial": sum(r["status"] == "partial" for r in rows),
            "no_results": sum(r["status"] == "no_results" for r in rows),
            "answers": MetadataValue.md("\n".join(md) or "No questions."),
            **engine.usage.as_metadata(),
            "duration_s": round(time.monotonic() - started, 3),
        }
    )


class LocalQuestionsConfig(Config):
    questions: list[str] = []
    """Questions about specific entities; with none here and no file, nothing is asked."""
    questions_file: str | None = None
    top_k: int = 8
    level: int | None = None


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
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    engine = make_engine(settings)
    emb = embedder.get_embedder()
    questions = load_questions(config.questions, config.questions_file, default=())
    cfg = LocalSearchConfig(top_k=config.top_k, community_level=config.level)
    rows, md = [], []
    for question in questions:
        res = engine.run_sync(local_search_async(store, question, engine, emb, cfg))
        rows.append(
            {
                "question": question,
                "status": res.status,
                "answer": res.answer,
                "communities": [c["id"] for c in res.communities],
                "selection": res.selection,
                "evidence_json": json.dumps(res.evidence, default=str),
                "n_evidence": len(res.evidence),
            }
        )
        md.append(
            f"### {question}\n\n**{res.status}** ({len(res.evidence)} evidence items)\n\n{res.answer}\n"
        )
    store.write_table(
        schema.QUERY_LOCAL_ANSWERS, pa.Table.from_pylist(rows, schema=schema.QUERY_LOCAL_ANSWERS_SCHEMA)
    )
    return MaterializeResult(
        metadata={
            "questions": len(rows),
            "answers": MetadataValue.md("\n".join(md) or "No local questions configured."),
            **engine.usage.as_metadata(),
            "duration_s": round(time.monotonic() - started, 3),
        }
    )


query_assets = [global_map_batches, global_map_answers, global_answers, local_answers]
