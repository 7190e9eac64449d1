"""Which executor the code location's jobs use: Dagster's default, or, when PIPELINE_DASK_SCHEDULER names a
dask.distributed scheduler, the dask executor of `assets/dask_executor.py` (imported only then: dask and
its dataframe layer cost most of a second at every start)."""

from typing import Any

from pipeline.settings import load_settings


def pipeline_executor() -> Any:
    """None keeps Dagster's default executor (one process per step)."""
    address = load_settings().dask_scheduler
    if address:
        from assets.dask_executor import packed_dask_executor

        return packed_dask_executor.configured({"cluster": {"existing": {"address": address}}}, name="dask")
    return None
