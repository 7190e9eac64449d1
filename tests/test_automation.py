"""Automation: the input-root sensor's ticks, the nightly schedule and the query assets' declarative
automation, evaluated against a real Dagster instance (temp DAGSTER_HOME) and real folders."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetSelection,
    SensorResult,
    build_schedule_context,
    evaluate_automation_conditions,
)

from assets.definitions import defs
from assets.indexing.schedules import nightly_reindex
from tests.support.sensor_ticks import Ticker, touch


def _runs(result: SensorResult) -> dict[str, str]:
    return {r.partition_key: r.tags["pipeline/change"] for r in result.run_requests or []}


def _added(result: SensorResult) -> list[str]:
    return sorted(k for r in result.dynamic_partitions_requests or [] for k in r.partition_keys)


def test_sensor_ticks_request_runs_and_partitions(tmp_path: Path, dagster_instance) -> None:
    root = tmp_path / "input"
    touch(root / "alpha" / "a.txt", "Alpha one.")
    touch(root / "beta" / "b.txt", "Beta one.")
    touch(root / "beta" / "c.md", "Beta two.")
    touch(root / "Not A Namespace" / "x.txt", "ignored: not a valid namespace name")
    ticker = Ticker(dagster_instance, root)

    first = ticker.tick()  # every folder is new: a partition and a run each
    assert _runs(first) == {"alpha": "new", "beta": "new"}
    assert _added(first) == ["alpha", "beta"]
    assert set(dagster_instance.get_dynamic_partitions("namespace")) >= {"alpha", "beta"}

    quiet = ticker.tick()
    assert not quiet.run_requests and not quiet.dynamic_partitions_requests and quiet.skip_reason

    touch(root / "alpha" / "new.txt", "Alpha added.")  # added file
    assert _runs(ticker.tick()) == {"alpha": "changed"}

    (root / "beta" / "c.md").unlink()  # deleted file
    assert _runs(ticker.tick()) == {"beta": "changed"}

    touch(root / "alpha" / "a.txt", "Alpha one, edited at more length.")  # edited file
    touch(root / "gamma" / "g.txt", "Gamma.")  # new folder
    tick = ticker.tick()
    assert _runs(tick) == {"alpha": "changed", "gamma": "new"}
    assert _added(tick) == ["gamma"]
    keys = [r.run_key for r in tick.run_requests]
    assert len(set(keys)) == 2 and all(k.split(":")[0] in {"alpha", "gamma"} for k in keys)

    os.rename(root / "gamma", tmp_path / "gamma_moved")  # a folder that disappears launches nothing
    gone = ticker.tick()
    assert not gone.run_requests and gone.skip_reason
    assert "gamma" in dagster_instance.get_dynamic_partitions("namespace")  # its index is kept


def test_sensor_on_a_missing_input_root_skips(tmp_path: Path, dagster_instance) -> None:
    result = Ticker(dagster_instance, tmp_path / "nowhere").tick()
    assert not result.run_requests and result.skip_reason


def test_nightly_schedule_requests_one_run_per_namespace(dagster_instance) -> None:
    dagster_instance.add_dynamic_partitions("namespace", ["night_a", "night_b"])
    when = dt.datetime(2026, 1, 2, 2, 0, tzinfo=dt.UTC)
    requests = nightly_reindex(
        build_schedule_context(instance=dagster_instance, scheduled_execution_time=when)
    )
    keys = dagster_instance.get_dynamic_partitions("namespace")
    assert sorted(r.partition_key for r in requests) == sorted(keys)
    assert {"night_a", "night_b"} <= {r.partition_key for r in requests}
    assert all(r.run_key == f"{r.partition_key}:2026-01-02" for r in requests)
    assert nightly_reindex.cron_schedule == "0 2 * * *"


def test_query_assets_refresh_after_their_upstream_changes(dagster_instance) -> None:
    dagster_instance.add_dynamic_partitions("namespace", ["auto_a", "auto_b"])
    selection = AssetSelection.groups("query")
    idle = evaluate_automation_conditions(defs=defs, instance=dagster_instance, asset_selection=selection)
    assert idle.total_requested == 0  # nothing indexed yet: nothing to answer
    dagster_instance.report_runless_asset_event(
        AssetMaterialization(asset_key="report_embeddings", partition="auto_a")
    )
    after = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, asset_selection=selection, cursor=idle.cursor
    )
    for key in (
        "global_map_batches",
        "global_map_answers",
        "global_answers",
        "local_answers",
        "drift_answers",
    ):
        assert after.get_requested_partitions(AssetKey(key)) == {"auto_a"}, key
    # Basic search reads only the text units' vectors: it refreshes when they change, not the reports.
    assert after.get_requested_partitions(AssetKey("basic_answers")) == set()
    dagster_instance.report_runless_asset_event(
        AssetMaterialization(asset_key="text_unit_embeddings", partition="auto_b")
    )
    later = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, asset_selection=selection, cursor=after.cursor
    )
    assert later.get_requested_partitions(AssetKey("basic_answers")) == {"auto_b"}


@pytest.mark.parametrize("name", ["input_root_sensor", "query_refresh_sensor"])
def test_automation_is_registered_and_running_by_default(name: str) -> None:
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def(name)
    assert sensor.default_status.value == "RUNNING"
    # the assets' on_cron condition replaced it (assets.indexing.automation); it stays, stopped, by name
    assert repo.get_schedule_def("nightly_reindex").default_status.value == "STOPPED"
