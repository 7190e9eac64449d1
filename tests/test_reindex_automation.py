"""Re-indexing declared on the assets (`assets.indexing.automation`), evaluated against a real Dagster
instance: the conditions are on the asset graph, a file added to a watched folder leads to exactly one
index run of its namespace (the input-root sensor ticked in-process, the run executed, then the
automation sensor's evaluation finds nothing left to do), and a changed ingest makes every indexing asset
below it one run of that namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetMaterialization, AssetSelection, evaluate_automation_conditions

from assets.definitions import defs
from assets.indexing.automation import NIGHTLY_CRON
from pipeline.index.stages import GROUP
from tests.support.sensor_ticks import Ticker, touch

NAMESPACE = "watched"


def _conditions() -> dict[str, str | None]:
    graph = defs.get_repository_def().asset_graph
    return {
        k.to_user_string(): (
            graph.get(k).automation_condition.get_label() if graph.get(k).automation_condition else None
        )
        for k in graph.get_all_asset_keys()
        if graph.get(k).group_name == GROUP
    }


def test_conditions_are_declared_on_the_indexing_assets() -> None:
    labels = _conditions()
    assert labels.pop("input_documents") == f"on_cron({NIGHTLY_CRON}, UTC)"
    assert labels and set(labels.values()) == {"reindex"}
    sensors = {s.name for s in defs.get_repository_def().sensor_defs}
    assert {"input_root_sensor", "query_refresh_sensor", "reindex_automation_sensor"} <= sensors
    assert defs.get_repository_def().get_schedule_def("nightly_reindex").default_status.value == "STOPPED"


def _execute(request, instance) -> None:
    job = defs.resolve_job_def("index_namespace")
    result = job.execute_in_process(partition_key=request.partition_key, instance=instance, tags=request.tags)
    assert result.success


def _requested(evaluation, namespace: str) -> set[str]:
    """The assets the evaluation asks to run for `namespace` (the automation sensor launches a tick's
    requests of one partition of one job's assets as one run)."""
    graph = defs.get_repository_def().asset_graph
    return {
        k.to_user_string()
        for k in graph.get_all_asset_keys()
        if namespace in evaluation.get_requested_partitions(k)
    }


def test_a_new_file_leads_to_exactly_one_index_run(
    tmp_path: Path, storage_root: Path, monkeypatch: pytest.MonkeyPatch, dagster_instance
) -> None:
    root = tmp_path / "input"
    monkeypatch.setenv("PIPELINE_INPUT_ROOT", str(root))
    touch(root / NAMESPACE / "a.txt", "Scrooge met Marley's ghost in London on Christmas Eve.")
    ticker = Ticker(dagster_instance, root)
    # the indexing group: the saved questions' own refresh after a re-index is another sensor's run
    everything = AssetSelection.groups(GROUP)
    cursor = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, asset_selection=everything
    ).cursor

    for change in ("new", "changed"):
        tick = ticker.tick()
        assert [(r.partition_key, r.tags["pipeline/change"]) for r in tick.run_requests] == [
            (NAMESPACE, change)
        ]
        _execute(tick.run_requests[0], dagster_instance)
        # the sensor's run brought every indexing asset of the namespace up to date: no condition asks for more
        after = evaluate_automation_conditions(
            defs=defs, instance=dagster_instance, asset_selection=everything, cursor=cursor
        )
        assert _requested(after, NAMESPACE) == set()
        cursor = after.cursor
        assert not ticker.tick().run_requests  # and the sensor sees no further change
        touch(root / NAMESPACE / "b.txt", "Bob Cratchit worked for Scrooge.")  # the next round's new file

    runs = dagster_instance.get_runs()
    mine = [r for r in runs if r.tags.get("dagster/partition") == NAMESPACE]
    assert len(mine) == 2  # one run per change, nothing launched twice


def test_a_changed_ingest_reindexes_its_namespace_in_one_run(dagster_instance) -> None:
    dagster_instance.add_dynamic_partitions("namespace", ["eager_a", "eager_b"])
    selection = AssetSelection.groups(GROUP)
    idle = evaluate_automation_conditions(defs=defs, instance=dagster_instance, asset_selection=selection)
    dagster_instance.report_runless_asset_event(
        AssetMaterialization(asset_key="input_documents", partition="eager_a")
    )
    after = evaluate_automation_conditions(
        defs=defs, instance=dagster_instance, asset_selection=selection, cursor=idle.cursor
    )
    requested = _requested(after, "eager_a")
    assert requested == set(_conditions()) - {"input_documents"}  # the whole chain below ingest
    assert requested <= {
        k.to_user_string() for k in defs.resolve_job_def("index_namespace").asset_layer.executable_asset_keys
    }
    assert _requested(after, "eager_b") == set()
    assert after.total_requested == len(requested)
