"""What a runner returns: the metadata and checks of one materialization, in plain Python.

Values are plain numbers and strings, or `Markdown` / `Json` / `PathValue` where a viewer should show
them as such; `assets/` turns them into Dagster metadata, `index_folder` prints them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.llm.usage import Usage


@dataclass(frozen=True)
class Markdown:
    text: str


@dataclass(frozen=True)
class Json:
    value: Any


@dataclass(frozen=True)
class PathValue:
    path: str


@dataclass
class Check:
    """An asset check's result: `name` is declared on the asset; `error` checks block, `warn` ones inform."""

    name: str
    passed: bool
    severity: Literal["error", "warn"] = "error"
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class StageReport:
    """One materialization: `rows` written, LLM `usage`, the stage's own metadata, checks, warnings.

    Every report carries `rows`, the LLM counters (zeros for a stage that calls no model, so a sum over
    a run never has a gap) and `duration_s`, so a run reads the same way at every step."""

    rows: int
    metadata: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    usage: Usage | None = None
    duration_s: float = 0.0

    def all_metadata(self) -> dict[str, Any]:
        usage = self.usage if self.usage is not None else Usage()
        return {"rows": self.rows, **usage.as_metadata(), **self.metadata, "duration_s": self.duration_s}


class Stopwatch:
    """Seconds since the stage began, rounded for metadata."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def seconds(self) -> float:
        return round(time.monotonic() - self.started, 3)


def md_table(rows: list[dict[str, Any]], columns: list[str], limit: int = 50) -> str:
    """A Markdown table of `rows` (first `limit`), for metadata a person reads in the UI."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows[:limit]:
        lines.append("| " + " | ".join(str(r.get(c, "")).replace("|", "\\|") for c in columns) + " |")
    if len(rows) > limit:
        lines.append(f"\n... and {len(rows) - limit} more")
    return "\n".join(lines)
