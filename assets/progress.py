"""Live progress of the indexing steps running in this process, for whoever draws it (the CLI).

`pipeline index` runs the Dagster job in this process (`assets.launch`), one step after another, so each
step body can tell a listener here when it starts, how far its long loop has got and when its asset is
materialized (`assets.indexing.observe`). Without a listener (a run launched from the UI, a step on a
dask worker) every call is a no-op: the run's own log still gets its few progress lines per stage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol


class StageListener(Protocol):
    def started(self, stage: str) -> None: ...

    def advanced(self, stage: str, what: str, done: int, total: int) -> None: ...

    def finished(self, asset: str, metadata: Mapping[str, Any]) -> None: ...


_listener: StageListener | None = None
_stage: str | None = None


@contextmanager
def listening(listener: StageListener) -> Iterator[StageListener]:
    """Send this process's step progress to `listener` while the block runs."""
    global _listener
    previous, _listener = _listener, listener
    try:
        yield listener
    finally:
        _listener = previous


def stage_started(stage: str) -> None:
    global _stage
    _stage = stage
    if _listener is not None:
        _listener.started(stage)


def current_stage() -> str | None:
    """The step that started last in this process (its op name)."""
    return _stage


def stage_advanced(what: str, done: int, total: int) -> None:
    if _listener is not None and _stage is not None:
        _listener.advanced(_stage, what, done, total)


def asset_materialized(asset: str | None, metadata: Mapping[str, Any]) -> None:
    """`asset` None: the asset of the step that started last (a single-asset step)."""
    name = asset or _stage
    if _listener is not None and name is not None:
        _listener.finished(name, metadata)
