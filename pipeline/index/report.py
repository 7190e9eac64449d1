"""What a runner returns: the metadata and checks of one materialization, in plain Python.

Values are plain numbers and strings, or `Markdown` / `Json` / `PathValue` where a viewer should show
them as such; `assets/` turns them into Dagster metadata, `index_folder` prints them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
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

    @classmethod
    def of_counts(
        cls, name: str, counts: Mapping[str, int], severity: Literal["error", "warn"] = "error"
    ) -> Check:
        """A check of things that must not happen: it passes when every count is 0; the counts are its
        metadata, so a failed check says how many of each."""
        return cls(
            name, passed=all(n == 0 for n in counts.values()), severity=severity, metadata=dict(counts)
        )


BUDGET_REFUSAL = "LLMBudgetExceededError"  # a failure row's error_type when the run's budget refused it


@dataclass
class Loss:
    """The units an LLM stage lost (text units, community reports), with the first reasons.

    Losing every unit, or more than `max_share` of them (`llm_max_failed_share`), is a failed stage: a
    run that extracted nothing is not a success. The stage has written what it has first, so the re-run
    pays only for what failed (the LLM cache answers the rest). A smaller loss is a warning. Units the
    run's LLM budget refused are not lost: the budget stopped them on purpose (`llm_budget_reached`)."""

    stage: str
    what: str  # plural noun of the units: "text units"
    total: int
    failed: int
    reasons: list[str]
    max_share: float

    @property
    def fatal(self) -> bool:
        return self.failed > 0 and (self.failed >= self.total or self.failed > self.max_share * self.total)

    def summary(self) -> str:
        return f"{self.stage}: {self.failed} of {self.total} {self.what} failed"

    def message(self) -> str:
        """Why the stage failed: the count, the rule it broke and the first reasons."""
        limit = "all of them" if self.failed >= self.total else f"more than {self.max_share:.0%}"
        first = " | ".join(self.reasons[:3]) or "no reason recorded"
        return (
            f"{self.summary()} ({limit}; PIPELINE_LLM_MAX_FAILED_SHARE={self.max_share:g}). What succeeded "
            f"is written; a re-run asks the model only for the failed ones. First reasons: {first}"
        )


@dataclass
class StageReport:
    """One materialization: `rows` written, LLM `usage`, the stage's own metadata, checks, warnings.

    Every report carries `rows`, the LLM counters (zeros for a stage that calls no model, so a sum over
    a run never has a gap) and `duration_s`, so a run reads the same way at every step. `loss`: the
    units an LLM stage lost, if any (`Loss.fatal` fails the step; else `lost` in the metadata says it)."""

    rows: int
    metadata: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    usage: Usage | None = None
    duration_s: float = 0.0
    loss: Loss | None = None

    def all_metadata(self) -> dict[str, Any]:
        usage = self.usage if self.usage is not None else Usage()
        lost = {"lost": self.loss.summary()} if self.loss is not None and self.loss.failed else {}
        return {
            "rows": self.rows,
            **usage.as_metadata(),
            **self.metadata,
            **lost,
            "duration_s": self.duration_s,
        }

    def fatal_loss(self) -> str | None:
        """The message of a loss that fails the stage, else None."""
        return self.loss.message() if self.loss is not None and self.loss.fatal else None


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
