"""How the service runs a query on its worker thread: the request body's mode, found in the registry
(`pipeline.query.registry`), run from the body's options to the result as a dict (`QueryService`
admits, times and bounds it).

Each query gets a fresh engine (its usage counters and connections are that query's). The
retrieval-only modes stop between their steps once the query is cancelled (`common.retrieval`), so a
query past its deadline frees its key's slot one step later instead of finishing its search.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.common.events import Sink
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


def answer(work: Work, kind: str, request: Any) -> dict[str, Any]:
    """Mode `kind`'s answer to `request` (its HTTP body), as a dict."""
    from pipeline.runtime import report_writer  # the composition root: the service imports no index

    mode = registry.mode(kind)
    prepared = registry.prepare(
        kind,
        getattr(request, mode.question),
        request,
        settings=work.settings,
        store=work.store,
        engine=work.new_engine() if mode.uses_model else None,
        embedder=work.embedder,
        deadline=work.deadline,
        cancel=work.cancel,
        events=work.events,
        write_reports=report_writer(work.settings),
    )
    return prepared.run_sync().to_dict()
