"""Every query mode, listed once: the doors (CLI, HTTP and OpenAPI, MCP, the Dagster query configs and
assets, `pipeline eval`, auto search's candidates, `--estimate`) loop over `MODES`.

Adding a mode is a package exporting a `Mode` record (`pipeline.query.common.mode`) plus one line here.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipeline.query.auto.mode import MODE as AUTO
from pipeline.query.basic.mode import MODE as BASIC
from pipeline.query.chunks.mode import MODE as CHUNKS
from pipeline.query.common import events
from pipeline.query.common.events import Sink
from pipeline.query.common.mode import MODES, Mode
from pipeline.query.common.mode import routable as routable
from pipeline.query.common.scope import QueryScope, leveled
from pipeline.query.drift.mode import MODE as DRIFT
from pipeline.query.global_.mode import MODE as GLOBAL
from pipeline.query.lazy.mode import MODE as LAZY
from pipeline.query.local.mode import MODE as LOCAL
from pipeline.query.vector.mode import MODE as VECTOR

# In the order `pipeline eval` asks them and its reports list them; the doors list them in this order.
# (The dict itself lives in `common.mode`, so that auto's `route` validates against it.)
MODES.update({m.name: m for m in (BASIC, LOCAL, DRIFT, GLOBAL, LAZY, AUTO, CHUNKS, VECTOR)})
__all__ = ["MODES", "Mode", "configure", "mode", "registered", "routable", "scope", "search"]


def mode(name: str) -> Mode:
    """The mode called `name`; KeyError naming the known ones."""
    try:
        return MODES[name]
    except KeyError:
        raise KeyError(f"unknown query mode {name!r}; modes are {', '.join(MODES)}") from None


def scope(
    store: Any,
    engine: Any,
    embedder: Any,
    deadline: float | None = None,
    cancel: Any = None,
    events: Sink | None = None,
    write_reports: Any = None,
) -> QueryScope:
    """A query's scope, with the registry's modes for a mode that hands the question on (auto),
    `events` to hear its progress (a streaming door), and `write_reports` to write deferred reports on
    first use (`QueryScope.write_reports`)."""
    return QueryScope(
        store,
        engine,
        leveled(store, embedder),
        deadline,
        cancel,
        modes=MODES,
        events=events,
        write_reports=write_reports,
    )


def search(name: str, scope: QueryScope, question: str, config: Any) -> Coroutine[Any, Any, Any]:
    """Mode `name`'s search, after its `route` event (a mode that routes the question itself, auto,
    sends its own once it has chosen)."""
    found = mode(name)
    if not found.routes:
        scope.emit(events.ROUTE, mode=name, route=name, reason=None)
    return found.search(scope, question, config)


def configure(name: str, settings: Any, given: Mapping[str, Any] | None = None) -> Any:
    """Mode `name`'s config: the configured values, with the options given that are not None."""
    return mode(name).configure(settings, {k: v for k, v in (given or {}).items() if v is not None})


@contextmanager
def registered(extra: Mode) -> Iterator[Mode]:
    """`extra` in the registry while the block runs (a toy mode in tests; a plug-in's own mode)."""
    if extra.name in MODES:
        raise ValueError(f"a query mode {extra.name!r} is registered already")
    MODES[extra.name] = extra
    try:
        yield extra
    finally:
        MODES.pop(extra.name, None)
