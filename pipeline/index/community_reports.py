"""community_reports: one report per community (GraphRAG's columns + fingerprint), written bottom-up
(`pipeline.ops.reports.build`): a community over the context budget stands on its sub-communities'
reports; an unchanged fingerprint reuses the stored report without an engine call; failures go to
failed_reports. Reports cite their context rows; cited ids the context lacks are removed and counted
(`citations_stripped`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.core import schema
from pipeline.engine.base import Engine
from pipeline.index.context import IndexContext
from pipeline.index.report import BUDGET_REFUSAL, Check, Loss, Markdown, StageReport, Stopwatch, md_table
from pipeline.index.report_options import reports_by_settings
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.build import ProgressFn, ReportsRun, failures_table


def index_community_reports(
    store: NamespaceStore,
    settings: Any,
    engine: Engine,
    progress: ProgressFn | None = None,
    min_entities: int = 0,
) -> ReportsRun:
    """communities + entities + relationships + covariates (+ the previous reports) -> community_reports
    and failed_reports. `min_entities`: see `build_reports` (the method's model reports pass
    `report_min_entities`; the extractive reports of the nlp method need no threshold)."""
    previous = (
        store.read_table(schema.COMMUNITY_REPORTS) if store.has_table(schema.COMMUNITY_REPORTS) else None
    )
    covariates = store.read_table(schema.COVARIATES) if store.has_table(schema.COVARIATES) else None
    communities, entities, relationships = (
        store.read_table(t) for t in (schema.COMMUNITIES, schema.ENTITIES, schema.RELATIONSHIPS)
    )
    run = reports_by_settings(
        communities,
        entities,
        relationships,
        covariates,
        engine,
        settings,
        previous=previous,
        min_entities=min_entities,
        progress=progress,
    )
    store.write_table(schema.COMMUNITY_REPORTS, run.reports)
    store.write_table(schema.FAILED_REPORTS, failures_table(run.failures))
    return run


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    settings, store, engine = ctx.settings, ctx.store, ctx.engine_for("reports")

    by_level: dict[int, Callable[[int, int], None]] = {}

    def progress(level: int, done: int, total: int) -> None:
        if level not in by_level:
            by_level[level] = ctx.progress(f"level {level} reports written")
        by_level[level](done, total)

    threshold = settings.report_min_entities if ctx.forms.get("reports") == "model" else 0
    result = index_community_reports(store, settings, engine, progress=progress, min_entities=threshold)
    for f in result.failures[:20]:
        ctx.log(f"community {f.community} (level {f.level}): {f.error_type}: {f.reason}")
    reports = result.reports.select(["community", "level", "size", "rank", "title"]).to_pylist()
    top = sorted((r for r in reports if r["level"] == 0), key=lambda r: (-r["size"], r["community"]))
    expected = set(store.read_table(schema.COMMUNITIES, columns=["community"]).column(0).to_pylist())
    covered = {r["community"] for r in reports} | {f.community for f in result.failures}
    lost = [f for f in result.failures if f.error_type != BUDGET_REFUSAL]
    return StageReport(
        rows=result.reports.num_rows,
        usage=engine.usage,
        metadata={
            "reports": result.reports.num_rows,
            "generated": result.generated,
            "extractive_small_communities": sum(
                s.get("extractive", 0) - s.get("deferred", 0) for s in result.per_level.values()
            ),
            "deferred_to_eager": sum(s.get("deferred", 0) for s in result.per_level.values()),
            "reused": result.reused,
            "failed": len(result.failures),
            "from_sub_reports": result.substituted,
            "citations_stripped": result.citations_stripped,
            "method": result.method,
            "model": result.model,
            "context_budget_tokens": (
                settings.report_max_input_tokens
                if result.method == "offline"
                else settings.report_context_tokens
            ),
            "per_level": Markdown(
                md_table(
                    [{"level": lv, **s} for lv, s in result.per_level.items()],
                    [
                        "level",
                        "communities",
                        "generated",
                        "reused",
                        "failed",
                        "substituted",
                        "citations_stripped",
                    ],
                )
            ),
            "top_level": Markdown(md_table(top, ["community", "size", "rank", "title"], limit=30)),
            "top_reports": Markdown(top_reports(result.reports.to_pylist())),
            "failures": Markdown(
                md_table(
                    [f.__dict__ for f in result.failures], ["community", "level", "error_type", "reason"]
                )
                if result.failures
                else "No failures."
            ),
        },
        checks=[
            Check.of_counts("no_failed_reports", {"failed_reports": len(result.failures)}, severity="warn"),
            Check(
                "one_report_per_community",
                passed=covered == expected and len(reports) == len({r["community"] for r in reports}),
                metadata={"missing": len(expected - covered), "unknown": len(covered - expected)},
            ),
        ],
        duration_s=clock.seconds(),
        loss=Loss(
            stage="community_reports",
            what="community reports",
            total=len(expected),
            failed=len(lost),
            reasons=[f"community {f.community}: {f.error_type}: {f.reason}" for f in lost[:3]],
            max_share=settings.llm_max_failed_share,
        ),
    )


def top_reports(reports: list[dict[str, Any]], limit: int = 5) -> str:
    """The highest-ranked reports as Markdown (title, place, summary): what the index found central."""
    ranked = sorted(reports, key=lambda r: (-(r["rank"] or 0.0), r["level"], r["community"]))[:limit]
    return "\n\n".join(
        f"### {r['title']}\n*community {r['community']}, level {r['level']}, rank {r['rank'] or 0:.1f}, "
        f"{r['size']} entities*\n\n{r['summary']}"
        for r in ranked
    )
