"""The service's worker pools by lane, how many queries each holds, and the `queued` event.

Each mode names its lane (`Mode.lane`): quick for retrieval alone, graph for the modes that build an
answer. Offline the graph lane has one worker (a query is Python computation under the GIL), so under
eight concurrent local streams a query waited a third of a second for it before its mode sent its first
event (`route`). Counting the queries a lane holds tells, when a query is admitted, whether it must wait
and how many wait ahead of it; a streamed query that must is sent `queued` at once
(bench/bench_first_question.py measured this against adding workers).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.query.common.events import Sink
from pipeline.query.common.mode import missing
from pipeline.settings import Settings


class Lanes:
    """One thread pool per lane, and the queries each holds (running or waiting for a worker)."""

    def __init__(self, workers: dict[str, int]) -> None:
        self.workers = workers
        self.pools = {
            lane: ThreadPoolExecutor(n, thread_name_prefix=f"{lane}-query") for lane, n in workers.items()
        }
        self._load = dict.fromkeys(workers, 0)
        self._lock = threading.Lock()

    def __getitem__(self, lane: str) -> ThreadPoolExecutor:
        return self.pools[lane]

    def values(self) -> list[ThreadPoolExecutor]:
        return list(self.pools.values())

    def enter(self, lane: str) -> int | None:
        """Count a query into `lane`: how many wait ahead of it for a worker, None when one is free."""
        with self._lock:
            load = self._load[lane]
            self._load[lane] = load + 1
        return load - self.workers[lane] if load >= self.workers[lane] else None

    def leave(self, lane: str) -> None:
        """The query's worker is done with it (or it never reached one)."""
        with self._lock:
            self._load[lane] -= 1


async def send_queued(
    settings: Settings, query: Any, lane: str, ahead: int, workers: int, events: Sink
) -> None:
    """A `queued` event before the query's worker is free. It is the stream's first event, so a refusal
    after it is an `error` event: it is sent only when the namespace has the mode's tables, so that a
    namespace not indexed yet is still the JSON 409 its worker answers."""
    store = NamespaceStore.from_settings(settings, query.namespace)
    needs = registry.mode(query.kind).needs
    if await asyncio.to_thread(lambda: store.exists() and not missing(store, needs)):
        events(ev.QUEUED, {"mode": query.kind, "lane": lane, "ahead": ahead, "workers": workers})
