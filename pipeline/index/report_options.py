"""The settings' report options, as `build_reports` takes them: the index's reports stage, its estimate, a
report written on first use and the GraphRAG import must all read the same, as a report's fingerprint
holds them (else a report is written again)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from pipeline.engine.base import Engine
from pipeline.ops.reports.build import ProgressFn, ReportsRun, build_reports
from pipeline.ops.reports.task import REPORT


def report_budget(settings: Any, identity: Any) -> dict[str, Any]:
    """The settings' report budget as `build_reports` and the GraphRAG import's `convert` take it: both
    must read the same, as a report's fingerprint holds it (else an imported report is written again).
    `identity` (the engine's `REPORT` identity): a model's reports have their own budgets, and their
    parents are written from their children's reports (`parent_budget`)."""
    if identity.method != "offline":
        return {
            "budget": settings.report_context_tokens,
            "parent_budget": settings.report_parent_context_tokens,
            "max_words": settings.report_max_words,
            "encoding": settings.encoding,
        }
    return {
        "budget": settings.report_max_input_tokens,
        "max_words": settings.report_max_words,
        "encoding": settings.encoding,
    }


def reports_by_settings(
    communities: pa.Table,
    entities: pa.Table,
    relationships: pa.Table,
    covariates: pa.Table | None,
    engine: Engine,
    settings: Any,
    *,
    previous: pa.Table | None,
    min_entities: int,
    progress: ProgressFn | None = None,
    **extra: Any,
) -> ReportsRun:
    """`build_reports` under the settings' report options: the stage, its estimate
    (`pipeline.index.estimate`) and a report written on first use (`community_reports_on_demand`, which
    passes `write_only`, `deadline` and `cancel` in `extra`) build the same reports."""
    identity = engine.identity(REPORT)
    budget = report_budget(settings, identity)
    if identity.method != "offline" and settings.reports == "on_demand":
        budget["model_max_level"] = 0  # global search starts from the roots (level 0)
    return build_reports(
        communities,
        entities,
        relationships,
        covariates,
        engine,
        **budget,
        previous=previous,
        progress=progress,
        min_entities=min_entities,
        min_claims=min_entities,  # the same bar: a community with as many claims has enough to report
        **extra,
    )
