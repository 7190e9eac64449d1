"""How the service runs a query on its worker thread: the request body's mode, found in the registry
(`pipeline.query.registry`), run from the body's options to the result as a dict (`QueryService`
admits, times and bounds it).

Each query gets a fresh engine (its usage counters and connections are that query's). The
retrieval-only modes stop between their steps once the query is cancelled (`common.retrieval`), so a
query past its deadline frees its key's slot one step later instead of finishing its search.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.common.events import Sink
from pipeline.query.common.scope import QueryScope
from pipeline.settings import Settings


@dataclass(frozen=True)
class Work:
    """One admitted query's store, settings, engine factory, embedder, deadline and cancel signal."""

    store: NamespaceStore
    settings: Settings
    new_engine: Callable[[], Engine]
    embedder: Embedder
    deadline: float
    cancel: threading.Event
    events: Sink | None = None  # a streamed query's listener (`pipeline.service.streams`)

    def scope(self, engine: Engine | None) -> QueryScope:
        """What a mode is handed: this query's store, embedder, clocks and listener, with `engine`."""
        from pipeline.runtime import report_writer  # the composition root: the service imports no index

        return registry.scope(
            self.store,
            engine,  # type: ignore[arg-type]
            self.embedder,
            self.deadline,
            self.cancel,
            self.events,
            write_reports=report_writer(self.settings),
        )


def answer(work: Work, kind: str, request: Any) -> dict[str, Any]:
    """Mode `kind`'s answer to `request` (its HTTP body), as a dict."""
    mode = registry.mode(kind)
    engine = work.new_engine() if mode.uses_model else None
    config = registry.configure(kind, work.settings, request.given())
    search = registry.search(kind, work.scope(engine), getattr(request, mode.question), config)
    return (engine.run_sync(search) if engine is not None else asyncio.run(search)).to_dict()
