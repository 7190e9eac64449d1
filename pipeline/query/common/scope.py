"""What every query mode is handed: the namespace's store, the engine that answers, the embedder that
ranks, the call's deadline and cancel signal, and where it reports its progress (`events`).

These five travel together through every mode (auto hands them to the mode it routes to, DRIFT to each
follow-up local search, `pipeline eval` to every mode in turn), so they are one object: a mode's
signature is `(scope, question, config)`, and a new thing every mode needs is one field here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pipeline.core.schema import LANCE_TEXT_UNITS
from pipeline.embeddings import levels
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.engine.task import Task
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, stopped
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.common.events import Sink

Req = TypeVar("Req")
Res = TypeVar("Res")


@dataclass(frozen=True)
class QueryScope:
    store: NamespaceStore
    engine: Engine
    embedder: Embedder
    deadline: float | None = None  # time.monotonic() after which no new call starts
    cancel: CancelSignal | None = None
    # The registry's modes (`pipeline.query.registry.scope` fills it): a mode that hands the question on
    # (auto) finds the others here instead of importing its siblings.
    modes: Mapping[str, Any] = field(default_factory=dict)
    # Who hears the query's events (`common.events`): a streaming door; None, nobody (every other caller).
    events: Sink | None = None
    # Writes the model reports an index with PIPELINE_REPORTS=on_demand deferred, when a query first needs
    # them (`pipeline.runtime.report_writer`; it is handed this scope): handed in, as query code imports no
    # index code. None: none is written (a caller that only reads).
    write_reports: Callable[..., Any] | None = None

    def emit(self, kind: str, **data: Any) -> None:
        """Report event `kind` with `data` (a no-op unless a door listens)."""
        if self.events is not None:
            self.events(kind, data)

    def recording(self) -> tuple[QueryScope, list[tuple[str, dict[str, Any]]]]:
        """This scope with its events kept in a list instead of sent: auto runs several modes and sends
        the events of the one it keeps (`replay`)."""
        kept: list[tuple[str, dict[str, Any]]] = []
        return replace(self, events=lambda kind, data: kept.append((kind, data))), kept

    def replay(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        for kind, data in events:
            self.emit(kind, **data)

    async def ask(self, task: Task[Req, Res], request: Req) -> Res:
        """`task` on `request` through the engine, under this call's embedder, deadline and cancel."""
        return await self.engine.run(
            task,
            request,
            embedder=self.embedder,
            deadline=self.deadline,
            cancel=self.cancel,
            events=self.events,
        )

    def stopped(self) -> str | None:
        """Why no new work may start ("cancelled", "deadline passed"), or None."""
        return stopped(self.cancel, self.deadline)

    def usage(self) -> dict[str, Any]:
        """The engine's counters now (calls, tokens, cache hits), for a result's `usage`."""
        return dict(self.engine.usage.counters())


def leveled(store: NamespaceStore, embedder: Any) -> Any:
    """`embedder` with the similarity levels the namespace's index measured (`pipeline.embeddings.levels`),
    read once per version of its `text_units` table. Every scope's embedder is one: the levels in force
    are the model's as this index measured it, whatever embedder object the door built."""
    if embedder is None:
        return None
    return levels.for_namespace(embedder, stored_levels(store))


def stored_levels(store: NamespaceStore) -> Any:
    """The similarity levels the namespace's index measured, read once per version of `text_units`."""
    versions = table_versions(store, lance=[LANCE_TEXT_UNITS])
    return cached_index(store, "similarity_levels", versions, lambda: levels.stored(store))


def start_clock(question: str) -> float:
    """A search's start time, once it is known there is a question to answer."""
    if not question or not question.strip():
        raise ValueError("question must not be empty")
    return time.monotonic()
