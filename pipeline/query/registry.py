"""Every query mode, listed once, and the one path a question takes at every door.

The doors (the Python API, the CLI, the HTTP API with SSE and MCP, the OpenAI door, the web app's
estimate, the Dagster saved-answer assets, `pipeline eval`) find a mode in `MODES` and run a question
through `prepare`/`run`: the options validated by the mode's own request model, its config from the
settings, the scope built, the search started. No door builds a scope or calls a search itself
(`tests/test_layout.py`).

Adding a mode is a package exporting a `Mode` record (`pipeline.query.common.mode`) plus one line here.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from pipeline.core import tables
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
from pipeline.query.requests import DOOR_FIELDS
from pipeline.query.vector.mode import MODE as VECTOR

__all__ = [
    "MODES",
    "Mode",
    "Prepared",
    "configure",
    "estimate",
    "mode",
    "options",
    "prepare",
    "registered",
    "routable",
    "run",
    "run_sync",
    "scope",
]


def _register(found: Mode) -> None:
    MODES[found.name] = found
    if found.saved is not None:  # its saved-answer table is checked on write like every other table
        tables.ANSWER_TABLES[found.saved_table] = found.saved_schema()


# In the order `pipeline eval` asks them and its reports list them; the doors list them in this order.
# (The dict itself lives in `common.mode`, so that auto's `route` validates against it.)
for _mode in (BASIC, LOCAL, DRIFT, GLOBAL, LAZY, AUTO, CHUNKS, VECTOR):
    _register(_mode)


def mode(name: str) -> Mode:
    """The mode called `name`; KeyError naming the known ones."""
    try:
        return MODES[name]
    except KeyError:
        raise KeyError(f"unknown query mode {name!r}; modes are {', '.join(MODES)}") from None


def options(name: str, given: Mapping[str, Any] | BaseModel | None = None) -> dict[str, Any]:
    """The options of mode `name` that are set, validated by its own request model as an HTTP body is
    (`top_k=500` is refused: pydantic's ValidationError); a door's own fields (namespace, stream, ...)
    and options left at None are dropped, so they keep the configured values."""
    found = mode(name)
    if isinstance(given, BaseModel):  # a door's body: its options, without the door's own fields
        given = given.given() if hasattr(given, "given") else given.model_dump(exclude_none=True)
    values = {k: v for k, v in (given or {}).items() if v is not None and k not in DOOR_FIELDS}
    return found.options.model_validate(values).given() if values else {}


def configure(name: str, settings: Any, given: Mapping[str, Any] | None = None) -> Any:
    """Mode `name`'s config: the configured values, with the options given that are not None."""
    return mode(name).configure(settings, {k: v for k, v in (given or {}).items() if v is not None})


def scope(store: Any, engine: Any, embedder: Any, **more: Any) -> QueryScope:
    """A query's scope with the registry's modes (a mode that hands the question on finds them there);
    `more`: QueryScope's deadline, cancel, events (who hears its progress) and write_reports (the writer
    of deferred reports on first use). What `prepare` builds, for a test or bench that runs one search
    by hand."""
    return QueryScope(store, engine, leveled(store, embedder), modes=MODES, **more)


@dataclass(frozen=True)
class Prepared:
    """A question ready to run: its mode, its config and its scope (which a renderer reads)."""

    mode: Mode
    question: str
    config: Any
    scope: QueryScope

    def search(self) -> Coroutine[Any, Any, Any]:
        """The mode's search, after its `route` event (a mode that routes the question itself, auto,
        sends its own once it has chosen)."""
        if not self.mode.routes:
            self.scope.emit(events.ROUTE, mode=self.mode.name, route=self.mode.name, reason=None)
        return self.mode.search(self.scope, self.question, self.config)

    def run_sync(self) -> Any:
        """The search run to its result on this thread: on the engine's loop, or on a fresh one for a
        mode that calls no model (a helper thread's, inside a running loop)."""
        if self.scope.engine is not None:
            return self.scope.engine.run_sync(self.search())
        from pipeline.llm.blocking import run_to_end

        return run_to_end(self.search())


def prepare(
    name: str,
    question: str,
    given: Mapping[str, Any] | BaseModel | None = None,
    *,
    settings: Any,
    store: Any,
    engine: Any,
    embedder: Any,
    deadline: float | None = None,
    cancel: Any = None,
    events: Sink | None = None,
    write_reports: Any = None,
    config: Any = None,
    own: Mapping[str, Any] | None = None,
) -> Prepared:
    """Mode `name`'s search of `question`, prepared: `given` (a mapping or a request model) validated by
    the mode's request model; its config built from `settings` with those options (or `config`, a ready
    one, with them); `own` set on the config after (a door's own flags, vector's `--store`); the scope
    with the registry's modes (a mode that hands the question on: auto), `events` to hear its progress
    (a streaming door) and `write_reports` to write deferred reports on first use."""
    found = mode(name)
    cfg = _config(name, settings, given, config, own)
    more = dict(deadline=deadline, cancel=cancel, events=events, write_reports=write_reports)
    return Prepared(found, question, cfg, scope(store, engine, embedder, **more))


def run(name: str, question: str, given: Mapping[str, Any] | BaseModel | None = None, **parts: Any) -> Any:
    """`prepare(...)`'s search: a coroutine of the mode's result (every keyword of `prepare`)."""
    return prepare(name, question, given, **parts).search()


def run_sync(
    name: str, question: str, given: Mapping[str, Any] | BaseModel | None = None, **parts: Any
) -> Any:
    """`run` to its result on this thread (`Prepared.run_sync`)."""
    return prepare(name, question, given, **parts).run_sync()


def estimate(
    name: str,
    question: str,
    given: Mapping[str, Any] | BaseModel | None = None,
    *,
    settings: Any,
    store: Any,
    embedder: Any,
    own: Mapping[str, Any] | None = None,
) -> Any:
    """The model calls, tokens and cost one question can take with mode `name` (`--estimate`, the web
    app's estimate), its options validated as `prepare`'s."""
    from pipeline.query.estimate import estimate_query

    return estimate_query(
        mode(name), store, question, settings, embedder, _config(name, settings, given, None, own)
    )


def _config(name: str, settings: Any, given: Any, config: Any, own: Mapping[str, Any] | None) -> Any:
    """The search's config: `given` validated, over `config` or the configured values; then `own`."""
    chosen = options(name, given)
    cfg = replace(config, **chosen) if config is not None else configure(name, settings, chosen)
    return replace(cfg, **own) if own else cfg


@contextmanager
def registered(extra: Mode) -> Iterator[Mode]:
    """`extra` in the registry while the block runs (a toy mode in tests; a plug-in's own mode)."""
    if extra.name in MODES:
        raise ValueError(f"a query mode {extra.name!r} is registered already")
    _register(extra)
    try:
        yield extra
    finally:
        MODES.pop(extra.name, None)
        if extra.saved is not None:
            tables.ANSWER_TABLES.pop(extra.saved_table, None)
