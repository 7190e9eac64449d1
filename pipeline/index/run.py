"""Index a folder from plain Python, no Dagster: the runners of every indexing asset, in the order of
the stage table (`pipeline.index.stages`), from which the `index_namespace` job's graph is built too.

    from pipeline.index.run import index_folder
    reports = index_folder("books", "path/to/folder")      # {asset name: StageReport}

Dagster adds what a batch platform adds (run history, partitions, retries, the UI, schedules, sensors,
scale-out); the tables written are the same.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport
from pipeline.index.stages import STAGES
from pipeline.io.repair import clear_damage
from pipeline.settings import Settings, load_settings


class IndexRunError(RuntimeError):
    """A stage's error check failed; the message names the stage and the check."""


def index_folder(
    namespace: str,
    input_dir: str | Path | None = None,
    *,
    settings: Settings | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, StageReport]:
    """Run every indexing stage for `namespace` on `input_dir` (default `<input_root>/<namespace>/`).

    Stops with IndexRunError when a stage's error-severity check fails, or an LLM stage lost all or more
    than `llm_max_failed_share` of its units (`report.Loss`), as the Dagster job would (its downstream
    assets would not run)."""
    ctx = IndexContext.build(namespace, settings or load_settings(), log=log)
    reports: dict[str, StageReport] = {}
    clear_damage(ctx.store, log)  # a damaged table is removed: its stage rebuilds it from its inputs

    def record(name: str, report: StageReport) -> None:
        reports[name] = report
        log(f"{name}: {report.rows} rows in {report.duration_s:.1f}s")
        failed = [c.name for c in report.checks if not c.passed and c.severity == "error"]
        if failed:
            raise IndexRunError(f"{name}: check(s) failed: {', '.join(failed)}")
        if (lost := report.fatal_loss()) is not None:
            raise IndexRunError(lost)

    for stage in STAGES:
        if stage.per_shard:
            continue  # fan-out is Dagster's: the namespace stage reading it does whatever no shard did
        # the final stage runs last: every table is written, queries move to this version all at once
        result = stage.run(ctx, input_dir) if stage.takes_input_dir else stage.run(ctx)
        if stage.final:
            continue  # a commit is no table: it logs its own line and is not among the reports
        for name, report in (result if len(stage.writes) > 1 else {stage.writes[0]: result}).items():
            record(name, report)
    return reports
