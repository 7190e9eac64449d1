"""Sensors: re-index a namespace when the files in its input folder change.

The sensor watches `<input_root>/<namespace>/` folders. Its cursor is the last fingerprint of each
folder (`pipeline.ops.incremental.input_fingerprints`: names, sizes and mtimes of the files), so a tick
costs a directory walk. The walk is ingest's (`pipeline.ops.input_folder.scan`): a FIFO is never opened
and a link out of the folder never followed, so neither hangs a tick nor lets an edit outside start a run. A new folder adds its `namespace` partition and runs it; a folder whose files
were added, edited or deleted runs again; the run key is the fingerprint, so a tick repeated after a
crash never launches the same run twice. A folder that disappears launches nothing: its index stays
until someone deletes the partition.
"""

from __future__ import annotations

import json

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from assets.indexing.jobs import index_job
from assets.partitions import namespace_partitions
from assets.resources import PipelineSettingsResource
from pipeline.index.stages import GROUP
from pipeline.ops.incremental import diff_inputs, input_fingerprints

TRIGGER_TAG = "pipeline/trigger"

# Evaluates the query assets' automation conditions (eager: refresh after report_embeddings or an
# upstream query asset changes). Dagster's default automation sensor starts stopped; this one runs.
query_refresh_sensor = AutomationConditionSensorDefinition(
    "query_refresh_sensor",
    target=AssetSelection.groups("query"),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Declarative automation: saved questions are answered again after a re-index.",
)

# Evaluates the indexing assets' conditions (`assets.indexing.automation`): the nightly re-index (on_cron,
# which replaced the hand-built `nightly_reindex` schedule) and eager re-runs below a changed ingest.
reindex_automation_sensor = AutomationConditionSensorDefinition(
    "reindex_automation_sensor",
    target=AssetSelection.groups(GROUP),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Declarative automation: the nightly re-index and the chain below changed input documents.",
)


# A sensor, not a condition: a file added to a folder is no asset event Dagster could observe, and a
# new folder must add its namespace partition before anything can run for it.
@sensor(
    name="input_root_sensor",
    job=index_job,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="New, changed or deleted files under <input_root>/<namespace>/ -> a run of that namespace.",
)
def input_root_sensor(
    context: SensorEvaluationContext, pipeline_settings: PipelineSettingsResource
) -> SensorResult:
    root = pipeline_settings.get_settings().input_root
    previous: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    watched = pipeline_settings.namespaces
    current = {ns: f for ns, f in input_fingerprints(root).items() if watched is None or ns in watched}
    changes = diff_inputs(previous, current)
    cursor = json.dumps(current, sort_keys=True)
    for ns in changes.removed:
        context.log.info(f"input folder of namespace {ns!r} is gone; its index is kept")
    missing = [
        ns for ns in current if not context.instance.has_dynamic_partition(namespace_partitions.name, ns)
    ]
    if not changes.to_index and not missing:
        return SensorResult(skip_reason=SkipReason(f"no change under {root}"), cursor=cursor)
    runs = [
        RunRequest(
            run_key=f"{ns}:{current[ns]}",
            partition_key=ns,
            tags={
                TRIGGER_TAG: "input_root_sensor",
                "pipeline/change": "new" if ns in changes.new else "changed",
            },
        )
        for ns in changes.to_index
    ]
    return SensorResult(
        run_requests=runs,
        dynamic_partitions_requests=[namespace_partitions.build_add_request(missing)] if missing else [],
        cursor=cursor,
    )
