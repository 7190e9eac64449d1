"""What `pipeline index` prints: one line per stage (a live bar on a terminal) and one summary table.

A stage's line says how far its long loop got (texts embedded, units extracted, reports written), what
it wrote and how long it took; on a terminal the running stage's line is a live rich progress bar, in a
log or a pipe each line is printed once, when its stage ends. The summary table shows only the counters
that are not zero (most stages call no model, and a row of twelve zeros per stage hides the rest).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn
from rich.table import Table

from assets.runs import IndexRunResult

# metadata key(s) -> column heading of the summary table
COUNTERS: list[tuple[str, tuple[str, ...]]] = [
    ("rows", ("rows",)),
    ("model calls", ("llm_calls",)),
    ("cache hits", ("llm_cache_hits",)),
    ("tokens in", ("llm_prompt_tokens",)),
    ("tokens out", ("llm_completion_tokens",)),
    ("cost USD", ("llm_cost_usd",)),
    ("failures", ("llm_failures", "failed")),
    ("budget refusals", ("llm_budget_refusals",)),
]


@dataclass
class _Stage:
    name: str
    started: float
    task: TaskID | None = None
    what: str = ""
    done: int = 0
    total: int = 0
    assets: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    ended: float | None = None

    def detail(self) -> str:
        parts = [f"{self.done}/{self.total} {self.what}"] if self.what else []
        for asset, meta in self.assets.items():
            rows = meta.get("rows")
            label = "" if asset == self.name and len(self.assets) == 1 else f"{asset} "
            if isinstance(rows, int):
                parts.append(f"{label}{rows} rows")
        return ", ".join(parts)

    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started


class StageDisplay:
    """An `assets.progress.StageListener` drawing each stage as it runs (see the module docstring)."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.live = self.console.is_terminal
        self.progress = Progress(
            TextColumn("  {task.fields[mark]} {task.description:<28}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[detail]}"),
            TextColumn("{task.fields[took]}"),
            console=self.console,
            disable=not self.live,
        )
        self.stages: list[_Stage] = []

    def __enter__(self) -> StageDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_current()
        self.progress.stop()

    def started(self, stage: str) -> None:
        self._end_current()
        s = _Stage(stage, time.monotonic())
        if self.live:
            s.task = self.progress.add_task(stage, total=None, mark=" ", detail="", took="")
        self.stages.append(s)

    def advanced(self, stage: str, what: str, done: int, total: int) -> None:
        s = self._current(stage)
        s.what, s.done, s.total = what, done, total
        if s.task is not None:
            self.progress.update(s.task, total=total, completed=done, detail=s.detail())

    def finished(self, asset: str, metadata: Mapping[str, Any]) -> None:
        s = self.stages[-1] if self.stages else self._current(asset)
        s.assets[asset] = metadata
        if s.task is not None:
            self.progress.update(s.task, detail=s.detail())

    def _current(self, stage: str) -> _Stage:
        if not self.stages or self.stages[-1].name != stage:
            self.started(stage)
        return self.stages[-1]

    def _end_current(self) -> None:
        if not self.stages or self.stages[-1].ended is not None:
            return
        s = self.stages[-1]
        s.ended = time.monotonic()
        ok = bool(s.assets)
        mark, took = ("✔" if ok else "✘"), f"  {s.seconds():.1f}s"
        if s.task is not None:
            total = s.total or 1
            self.progress.update(
                s.task,
                total=total,
                completed=total if ok else s.done,
                mark=mark,
                detail=s.detail(),
                took=took,
            )
        else:
            bar = "━" * 24 if ok else "╸" + " " * 23
            line = f"  {mark} {s.name:<28} {bar} {s.detail()}{took}"
            self.console.print(line, markup=False, soft_wrap=True)


def _number(meta: Mapping[str, Any], keys: tuple[str, ...]) -> float:
    total = 0.0
    for key in keys:
        value = meta.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += value
    return total


def _cell(value: float, heading: str) -> str:
    if not value:
        return ""
    return f"{value:.4f}" if heading == "cost USD" else f"{int(value):,}"


def summary_table(result: IndexRunResult) -> Table:
    """Per materialized asset, the counters of `COUNTERS` that are not zero in some row."""
    shown = [
        (heading, keys) for heading, keys in COUNTERS if any(_number(s.metadata, keys) for s in result.steps)
    ]
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("asset")
    for heading, _ in shown:
        table.add_column(heading, justify="right")
    for step in result.steps:
        table.add_row(step.asset, *(_cell(_number(step.metadata, keys), h) for h, keys in shown))
    totals = [(h, sum(_number(s.metadata, keys) for s in result.steps)) for h, keys in shown if h != "rows"]
    if any(v for _, v in totals):
        table.add_section()
        table.add_row("total", *("" if h == "rows" else _cell(dict(totals)[h], h) for h, _ in shown))
    return table


def print_outcome(result: IndexRunResult, seconds: float, console: Console | None = None) -> None:
    """The run's one-line outcome and its summary table (stdout), then each failed stage (stderr)."""
    console = console or Console(highlight=False)
    outcome = "SUCCESS" if result.success else "FAILED"
    console.print(f"\nrun {result.run_id}: {outcome} in {seconds:.1f}s", markup=False, soft_wrap=True)
    rejected = rejection_line(result)
    if any(_number(s.metadata, keys) for s in result.steps for h, keys in COUNTERS if h != "rows"):
        console.print(summary_table(result))
    elif result.steps:  # rows alone are on the stage lines already
        rows = sum(int(_number(s.metadata, ("rows",))) for s in result.steps)
        failures = "" if rejected else ", no failures"
        console.print(f"{len(result.steps)} assets, {rows:,} rows; no model calls{failures}")
    if rejected:
        console.print(rejected, markup=False, soft_wrap=True)
    print_losses(result)
    print_failures(result)


def rejection_line(result: IndexRunResult) -> str | None:
    """`N of M files rejected (see ingest_errors)` from the input stage's metadata, None if none was."""
    from pipeline.ops.ingest import rejection_line as line

    files, rejected, rows = (
        int(sum(_number(s.metadata, (key,)) for s in result.steps))
        for key in ("input_files", "files_rejected", "rows_rejected")
    )
    return line(files, rejected, rows)


def print_losses(result: IndexRunResult, file: Any = None) -> None:
    """A loss under `llm_max_failed_share` is a success, said once per stage (`pipeline.index.report.Loss`)."""
    for step in result.steps:
        if lost := step.metadata.get("lost"):
            print(
                f"warning: {lost}; their rows and reasons are in the failed_* table, a re-run retries them",
                file=file or sys.stdout,
            )


def print_failures(result: IndexRunResult) -> None:
    for message in result.failures:  # "<step>: <error>" (assets.runs.summarize_run)
        print(f"error: stage {message}", file=sys.stderr)
    if result.failures:
        print("(run again with -v to see Dagster's events of the run)", file=sys.stderr)


def outcome_json(result: IndexRunResult, seconds: float) -> str:
    """The run for a machine: ids, outcome, every materialization's metadata, failures."""
    return json.dumps(
        {
            "run_id": result.run_id,
            "run_ids": result.run_ids,
            "success": result.success,
            "duration_s": round(seconds, 3),
            "steps": [
                {"asset": s.asset, "metadata": {k: _plain_json(v) for k, v in s.metadata.items()}}
                for s in result.steps
            ],
            "failures": result.failures,
        },
        indent=2,
        default=str,
    )


def _plain_json(value: Any) -> Any:
    """Dagster's TableSchema (`dagster/column_schema`, a record json cannot walk) as its columns."""
    columns = getattr(value, "columns", None)
    if columns is not None:
        return [{"name": c.name, "type": c.type} for c in columns]
    return value
