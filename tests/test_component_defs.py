"""GraphRAGIndex's fields shape what it loads: the defaults give this repository's code location; the
automation fields drop the folder sensor or the cron; `namespaces` narrows what the sensor watches."""

from __future__ import annotations

from pathlib import Path

from dagster import build_sensor_context

from assets.component import GraphRAGIndex
from assets.definitions import defs
from assets.indexing.sensors import input_root_sensor
from assets.resources import PipelineSettingsResource
from tests.support.sensor_ticks import touch


def _shape(definitions) -> dict:
    repo = definitions.get_repository_def()
    graph = repo.asset_graph
    return {
        "assets": sorted(k.to_user_string() for k in graph.get_all_asset_keys()),
        "checks": sorted(
            (k.asset_key.to_user_string(), k.name, graph.get_check_spec(k).blocking)
            for k in graph.asset_check_keys
        ),
        "jobs": sorted(j.name for j in repo.get_all_jobs()),
        "sensors": sorted(s.name for s in repo.sensor_defs),
        "schedules": sorted(s.name for s in repo.schedule_defs),
    }


def test_a_yaml_instance_loads_the_code_locations_graph() -> None:
    loaded = GraphRAGIndex.model_validate(
        {"input": "data", "namespaces": ["books"], "llm": {"provider": "offline"}}
    )
    assert _shape(loaded.definitions()) == _shape(defs)
    assert "index_namespace" in _shape(defs)["jobs"] and "nightly_reindex" in _shape(defs)["schedules"]


def test_automation_fields_drop_the_sensor_and_the_cron() -> None:
    quiet = GraphRAGIndex.model_validate({"automation": {"on_new_files": False, "cron": None}}).definitions()
    assert "input_root_sensor" not in _shape(quiet)["sensors"]
    graph = quiet.get_repository_def().asset_graph
    labels = {
        graph.get(k).automation_condition.get_label()
        for k in graph.get_all_asset_keys()
        if graph.get(k).group_name == "indexing" and graph.get(k).automation_condition
    }
    assert labels == {"reindex"} and not any(
        "on_cron" in str(graph.get(k).automation_condition) for k in graph.get_all_asset_keys()
    )


def test_namespaces_narrow_what_the_sensor_watches(tmp_path: Path, dagster_instance) -> None:
    root = tmp_path / "input"
    touch(root / "alpha" / "a.txt", "Alpha.")
    touch(root / "beta" / "b.txt", "Beta.")
    settings = PipelineSettingsResource(input_root=str(root), namespaces=["alpha"])
    result = input_root_sensor(
        build_sensor_context(instance=dagster_instance, resources={"pipeline_settings": settings})
    )
    assert [r.partition_key for r in result.run_requests] == ["alpha"]


def test_the_model_key_is_named_never_given() -> None:
    loaded = GraphRAGIndex.model_validate({"llm": {"provider": "openai", "api_key_env": "MY_KEY"}})
    settings = loaded.definitions().resources["pipeline_settings"]
    assert settings.llm_api_key_env == "MY_KEY" and settings.get_settings().llm_api_key_env == "MY_KEY"
