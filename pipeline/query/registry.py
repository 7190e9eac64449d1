"""Every query mode, listed once: the doors (CLI, HTTP and OpenAPI, MCP, the Dagster query configs and
assets, `pipeline eval`, auto search's candidates, `--estimate`) loop over `MODES`.

Adding a mode is a package exporting a `Mode` record (`pipeline.query.common.mode`) plus one line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pipeline.query.auto.mode import MODE as AUTO
from pipeline.query.basic.mode import MODE as BASIC
from pipeline.query.common.mode import Mode
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.mode import MODE as DRIFT
from pipeline.query.global_.mode import MODE as GLOBAL
from pipeline.query.lazy.mode import MODE as LAZY
from pipeline.query.local.mode import MODE as LOCAL

# In the order `pipeline eval` asks them and its reports list them.
MODES: dict[str, Mode] = {m.name: m for m in (BASIC, LOCAL, DRIFT, GLOBAL, LAZY, AUTO)}


def mode(name: str) -> Mode:
    """The mode called `name`; KeyError naming the known ones."""
    try:
        return MODES[name]
    except KeyError:
        raise KeyError(f"unknown query mode {name!r}; modes are {', '.join(MODES)}") from None


def routable() -> list[str]:
    """The modes auto search may hand a question to and `pipeline eval` asks, in registry order."""
    return [name for name, m in MODES.items() if m.routable]


def scope(
    store: Any, engine: Any, embedder: Any, deadline: float | None = None, cancel: Any = None
) -> QueryScope:
    """A query's scope, with the registry's modes for a mode that hands the question on (auto)."""
    return QueryScope(store, engine, embedder, deadline, cancel, modes=MODES)


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
