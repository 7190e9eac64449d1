"""The input-root sensor driven as the Dagster daemon drives it (`Ticker`: each tick's cursor handed to the
next, its dynamic partitions added), and `touch` for the files it watches."""

from __future__ import annotations

from pathlib import Path

from dagster import SensorResult, build_sensor_context

from assets.indexing.sensors import input_root_sensor
from assets.resources import PipelineSettingsResource


class Ticker:
    """Evaluates the sensor as the daemon does: the cursor of one tick is handed to the next."""

    def __init__(self, instance, root: Path) -> None:
        self.instance = instance
        self.root = root
        self.cursor: str | None = None

    def tick(self) -> SensorResult:
        context = build_sensor_context(
            instance=self.instance,
            cursor=self.cursor,
            resources={"pipeline_settings": PipelineSettingsResource(input_root=str(self.root))},
        )
        result = input_root_sensor(context)
        assert isinstance(result, SensorResult)
        self.cursor = result.cursor
        for request in result.dynamic_partitions_requests or []:  # what the daemon does with them
            self.instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        return result


def touch(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
