"""What a caller is told of an indexing run, whichever way it ran (in-process or on a dask cluster)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class StepSummary:
    asset: str
    metadata: dict[str, Any]


@dataclass
class IndexRunResult:
    run_ids: list[str]  # one run in-process; prepare, shards and finish on a dask cluster
    success: bool
    steps: list[StepSummary]
    failures: list[str]

    @property
    def run_id(self) -> str:
        """The last run: the one that wrote the namespace's final tables."""
        return self.run_ids[-1]


def _plain(value: Any) -> Any:
    return getattr(value, "value", value)


def summarize_run(result: Any, on_event: Callable[[str], None] | None = None) -> IndexRunResult:
    """What a caller wants of a run: the materializations' metadata and each failed step's error."""
    steps = []
    for mat in result.get_asset_materialization_events():
        m = mat.materialization
        meta = {k: _plain(v) for k, v in m.metadata.items()}
        steps.append(StepSummary(m.asset_key.to_user_string(), meta))
        if on_event:
            on_event(f"materialized {m.asset_key.to_user_string()}")
    failures = [
        f"{e.step_key}: {_failure_message(e.step_failure_data)}"
        for e in result.all_events
        if e.is_step_failure
    ]
    return IndexRunResult([result.run_id], result.success, steps, failures)


def _failure_message(data: Any) -> str:
    """A step's error: a `dagster.Failure`'s own description (a stage that lost its units), else the
    error's message."""
    user = getattr(data, "user_failure_data", None)
    if user is not None and user.description:
        return user.description
    return data.error.message.strip() if data.error else "failed"


def documents_run_config(input_dir: str | None) -> dict[str, Any]:
    if not input_dir:
        return {}
    return {"ops": {"documents": {"config": {"input_dir": str(Path(input_dir).resolve())}}}}
