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


def _root_error(error: Any) -> str:
    """The error the step's code raised, not Dagster's "Error occurred while executing op" around it."""
    if error is None:
        return "failed"
    while getattr(error, "cause", None) is not None:
        error = error.cause
    return error.message.strip()


def summarize_run(result: Any, on_event: Callable[[str], None] | None = None) -> IndexRunResult:
    """What a caller wants of a run: the materializations' metadata and each failed step's error."""
    steps = []
    for mat in result.get_asset_materialization_events():
        m = mat.materialization
        meta = {k: _plain(v) for k, v in m.metadata.items()}
        steps.append(StepSummary(m.asset_key.to_user_string(), meta))
        if on_event:
            on_event(f"materialized {m.asset_key.to_user_string()}")
    # A step stopped by a failed blocking check fails with only the check's name; its reason (the count
    # and the first causes) is on the check's evaluation, so that is what the step's failure says.
    blocked: dict[str, list[str]] = {}
    for e in result.all_events:
        evaluation = e.event_specific_data if e.event_type_value == "ASSET_CHECK_EVALUATION" else None
        if evaluation is not None and not evaluation.passed and evaluation.blocking:
            blocked.setdefault(e.step_key, []).append(evaluation.description or evaluation.check_name)
    failures = [
        f"{e.step_key}: "
        + ("; ".join(blocked[e.step_key]) if e.step_key in blocked else _failure_message(e.step_failure_data))
        for e in result.all_events
        if e.is_step_failure
    ]
    return IndexRunResult([result.run_id], result.success, steps, failures)


def _failure_message(data: Any) -> str:
    """A step's error: a `dagster.Failure`'s own description (a stage that lost its units), else the
    error the step's code raised (`_root_error`)."""
    user = getattr(data, "user_failure_data", None)
    if user is not None and user.description:
        return user.description
    return _root_error(data.error)


def documents_run_config(input_dir: str | None) -> dict[str, Any]:
    if not input_dir:
        return {}
    return {"ops": {"input_documents": {"config": {"input_dir": str(Path(input_dir).resolve())}}}}


def last_run_spend(instance: Any, namespace: str, asset: str = "community_reports") -> dict[str, Any] | None:
    """The model spend of the namespace's last run that materialized `asset`: its run id and the sums
    of the LLM counters over every materialization of that run; None before any run."""
    from dagster import AssetKey, AssetRecordsFilter, DagsterEventType

    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[namespace]), limit=1
    ).records
    if not records:
        return None
    run_id = records[0].run_id
    totals = {"run_id": run_id, "llm_calls": 0, "llm_prompt_tokens": 0, "llm_completion_tokens": 0}
    totals["llm_cost_usd"] = 0.0
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION):
        materialization = entry.asset_materialization
        if materialization is None or materialization.partition != namespace:
            continue
        for key in list(totals)[1:]:
            totals[key] += _plain(materialization.metadata.get(key)) or 0
    return totals
