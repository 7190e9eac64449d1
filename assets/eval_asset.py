"""`eval_report`: `pipeline eval` as an asset, partitioned by namespace, so an evaluation can follow a
re-index and the UI shows its result: the per-mode table and the per-type tables as Markdown metadata,
the charts as a page beside the report (`eval/` in the namespace's folder). The work is in
`pipeline.eval`."""

import tempfile
import time
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, Config, MaterializeResult, MetadataValue, asset
from pydantic import Field

from assets.indexing.observe import step_engine
from assets.partitions import namespace_partitions
from assets.resources import LLM_POOL, EmbedderResource, PipelineSettingsResource
from pipeline.eval.questions import load_questions
from pipeline.eval.report import FILES, overall_table, type_table, write_report
from pipeline.eval.run import eval_modes, evaluate_async, parse_modes

REPORT_DIR = "eval"  # in the namespace's folder


class EvalConfig(Config):
    questions_file: str = Field(
        description="JSONL, CSV or JSON: question, answer, gold_documents, gold_passages, type (see docs/evaluation.md)"
    )
    modes: list[str] = Field(
        default_factory=lambda: list(eval_modes()), description="The modes to evaluate, in order"
    )
    limit: int | None = Field(default=None, description="Only the first N questions")


@asset(
    partitions_def=namespace_partitions,
    group_name="eval",  # not "query": the saved-questions job runs that group without a questions file
    deps=[AssetKey("report_embeddings")],
    description="Every query mode measured on the namespace's own questions (pipeline eval): context "
    "recall, answer coverage, the judge's verdicts with a model, calls, tokens, latency.",
    kinds={"html"},
    pool=LLM_POOL,
)
def eval_report(
    context: AssetExecutionContext,
    config: EvalConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    modes = parse_modes(config.modes)
    questions = load_questions(config.questions_file, config.limit)
    engine = step_engine(context, settings)
    work = evaluate_async(
        store, engine, embedder.get_embedder(), settings, questions, modes, context.log.info
    )
    run = engine.run_sync(work)
    report = run.to_dict()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_report(Path(tmp) / "report", report, run.rows)
        for name in FILES:
            store.write_bytes(f"{REPORT_DIR}/{name}", files[name].read_bytes())
    metrics = report["metrics"]
    tables = "\n\n".join(
        [overall_table(metrics)]
        + [f"**{label} per type**\n\n" + type_table(metrics, m) for m, label in _TYPE_TABLES]
    )
    return MaterializeResult(
        metadata={
            "questions": report["questions"],
            "modes": ", ".join(modes),
            "metrics": MetadataValue.md(tables),
            "chart": MetadataValue.path(str(store.location(f"{REPORT_DIR}/chart.html"))),
            "report": MetadataValue.path(str(store.location(f"{REPORT_DIR}/report.html"))),
            **engine.usage.as_metadata(),
            "duration_s": round(time.monotonic() - started, 3),
        }
    )


_TYPE_TABLES = (("context_recall", "Context recall %"), ("answer_coverage", "Answer coverage %"))
