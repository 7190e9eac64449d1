"""A `pipeline index` run's own record, for a reader that is not this process (the query service).

`pipeline index --record PREFIX` writes, as the run goes:
- `PREFIX.events.jsonl`: one JSON line per stage start, progress step and materialized asset, each
  stamped, with its sequence number, so a reader can tail it (the service's run events stream);
- `PREFIX.result.json` when the run ends, whole (written aside, then renamed): its outcome, the Dagster
  run ids, each stage's timing and rows, the model calls, tokens and cost summed over its assets, and the
  failures. A run killed before that leaves no result: its reader knows it ended unfinished.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assets.runs import IndexRunResult
from pipeline.io.local_json import write_json

USAGE = ("llm_calls", "llm_prompt_tokens", "llm_completion_tokens", "llm_cost_usd")
# The metadata a stage's line carries: its row counts and what it read, not its schema or previews.
ROWS = ("rows", "documents", "text_units", "entities", "relationships", "claims", "communities", "reports")
DELTA = ("documents_", "text_units_")  # what the incremental run found new, changed, removed, unchanged


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _plain(value: Any) -> Any:
    value = getattr(value, "value", value)
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


class RunRecorder:
    """An `assets.progress.StageListener` that writes the run's events and, at its end, its result."""

    def __init__(self, prefix: str | Path) -> None:
        self.prefix = Path(prefix)
        self.prefix.parent.mkdir(parents=True, exist_ok=True)
        self._events = open(f"{self.prefix}.events.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._seq = 0
        self.started_at = time.monotonic()
        self.stages: list[dict[str, Any]] = []
        self._t0: float | None = None
        self.delta: dict[str, Any] = {}

    def _write(self, event: str, **fields: Any) -> None:
        self._seq += 1
        line = {"seq": self._seq, "at": _now(), "event": event, **fields}
        self._events.write(json.dumps(line, default=str) + "\n")
        self._events.flush()  # a reader tails this file while the run goes on

    def _close_stage(self) -> None:
        if self.stages and self._t0 is not None and "seconds" not in self.stages[-1]:
            self.stages[-1]["seconds"] = round(time.monotonic() - self._t0, 3)
            self._write("stage_finished", **self.stages[-1])

    def started(self, stage: str) -> None:
        self._close_stage()
        self._t0 = time.monotonic()
        self.stages.append({"stage": stage, "started_at": _now(), "assets": {}})
        self._write("stage_started", stage=stage)

    def advanced(self, stage: str, what: str, done: int, total: int) -> None:
        self._write("stage_progress", stage=stage, what=what, done=done, total=total)

    def finished(self, asset: str, metadata: Mapping[str, Any]) -> None:
        counts = {k: _plain(v) for k, v in metadata.items() if k in ROWS or k in USAGE or k.startswith(DELTA)}
        for key, value in counts.items():
            if key.startswith(DELTA):
                self.delta[key] = value
        if self.stages:
            self.stages[-1]["assets"][asset] = counts
        self._write("asset_materialized", asset=asset, metadata=counts)

    def begin(self, namespace: str) -> None:
        self._write("run_started", namespace=namespace, pid=os.getpid())

    def end(self, result: IndexRunResult | None, error: str | None = None) -> None:
        """The run's result file, then its last event (the reader's sign that the record is whole)."""
        self._close_stage()
        usage: dict[str, float] = dict.fromkeys(USAGE, 0)
        for step in result.steps if result else []:
            for key in USAGE:
                usage[key] += _plain(step.metadata.get(key)) or 0
        failures = list(result.failures) if result else [error or "the run raised before it started"]
        outcome = {
            "success": bool(result and result.success),
            "dagster_run_ids": list(result.run_ids) if result else [],
            "seconds": round(time.monotonic() - self.started_at, 3),
            "stages": self.stages,
            "usage": usage,
            "delta": self.delta,
            "failures": failures,
            "ended_at": _now(),
        }
        write_json(Path(f"{self.prefix}.result.json"), outcome)  # whole: the service reads it
        self._write("run_finished", success=outcome["success"], failures=failures)
        self._events.close()
