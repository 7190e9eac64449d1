"""Schedules: the nightly re-index of every namespace.

A re-index of an unchanged namespace costs no LLM call and no embedding (every result is cached by
content), so the nightly run is cheap; after a prompt or model change it re-does exactly what changed.
"""

from __future__ import annotations

from dagster import DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from assets.indexing.jobs import index_job
from assets.indexing.sensors import TRIGGER_TAG
from assets.partitions import namespace_partitions


@schedule(
    name="nightly_reindex",
    job=index_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    # Stopped by default: the indexing assets' on_cron condition (assets.indexing.automation) says the
    # same and `reindex_automation_sensor` runs it; kept, by name, for deployments that turned it on.
    default_status=DefaultScheduleStatus.STOPPED,
    description="02:00 UTC: one index run per registered namespace partition (the assets' on_cron "
    "condition does the same; start this only with that sensor stopped).",
)
def nightly_reindex(context: ScheduleEvaluationContext) -> list[RunRequest] | SkipReason:
    namespaces = sorted(context.instance.get_dynamic_partitions(namespace_partitions.name))
    if not namespaces:
        return SkipReason("no namespace partition registered yet")
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        RunRequest(run_key=f"{ns}:{day}", partition_key=ns, tags={TRIGGER_TAG: "nightly_reindex"})
        for ns in namespaces
    ]
