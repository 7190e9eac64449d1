"""Re-indexing declared on the assets, evaluated by Dagster's automation-condition sensor.

- `input_documents` (the ingest asset) re-runs on the nightly cron: a re-index of an unchanged namespace
  costs no LLM call and no embedding (every result is cached by content), and after a prompt or model
  change it re-does exactly what changed.
- Every namespace-level asset downstream of it is eager: when what it reads changed (new or changed
  input documents, through the chain) it runs for that namespace partition, and on the same cron so the
  nightly run is one run of the whole chain. It waits while a dependency is missing or in progress, and
  never builds on a dependency whose blocking check failed (`assets.indexing.blocking`), so a run the
  checks stopped is not finished later by the sensor.

What a condition cannot say stays a sensor (`assets.indexing.sensors.input_root_sensor`): a file added
to a watched folder is no asset event, and a new folder must add its namespace partition first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dagster import AssetSelection, AssetSpec, AutomationCondition, map_asset_specs

from pipeline.index.stages import GROUP, SHARD_GROUP

NIGHTLY_CRON = "0 2 * * *"
CRON_TIMEZONE = "UTC"
INGEST = "input_documents"

# The shard assets run only in a distributed index (its own three runs); eager and on_cron must not wait
# for them, or a namespace indexed in one run would never count as up to date.
_SHARDS = AssetSelection.groups(SHARD_GROUP)


def nightly(cron: str = NIGHTLY_CRON) -> AutomationCondition:
    return AutomationCondition.on_cron(cron, CRON_TIMEZONE).ignore(_SHARDS)


def ingest_condition(cron: str | None = NIGHTLY_CRON) -> AutomationCondition | None:
    """The ingest asset's condition: the cron (None: no scheduled re-index)."""
    return nightly(cron) if cron else None


def downstream_condition(cron: str | None = NIGHTLY_CRON) -> AutomationCondition:
    """An indexing asset below ingest: eager on new or changed inputs, and the cron's re-index."""
    eager = (AutomationCondition.eager() & AutomationCondition.all_deps_blocking_checks_passed()).ignore(
        _SHARDS
    )
    return (eager | nightly(cron)).with_label("reindex") if cron else eager.with_label("reindex")


def with_reindex_automation(assets: Iterable[Any], cron: str | None = NIGHTLY_CRON) -> list[Any]:
    """`assets` with the re-index conditions set on the indexing group's namespace-level assets."""

    def declare(spec: AssetSpec) -> AssetSpec:
        if spec.group_name != GROUP:
            return spec
        condition = (
            ingest_condition(cron) if spec.key.to_user_string() == INGEST else downstream_condition(cron)
        )
        return spec.replace_attributes(automation_condition=condition)

    return list(map_asset_specs(declare, list(assets)))
