"""Coroutines run to their end from code that is not async, whether or not its thread already runs an
event loop.

`asyncio.run` refuses to nest: called inside a running loop (a Jupyter cell, an async service handler,
a query mode that calls a sync embedder) it raises. `run_to_end` runs the coroutine on a helper thread's
own loop there, and `SharedLoop` keeps one loop on a daemon thread per process for calls that should
share their connections (an OpenAI-compatible embedder: one HTTP pool for every query of a process).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_to_end(coro: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coro)`, on a helper thread when this thread is already running a loop (which then
    waits: the caller asked for a blocking call)."""
    if not in_running_loop():
        return asyncio.run(coro)
    with ThreadPoolExecutor(1, thread_name_prefix="run-to-end") as pool:
        return pool.submit(asyncio.run, coro).result()


class SharedLoop:
    """One event loop on a daemon thread, started on first use and again in a forked child (a loop's
    thread does not survive a fork)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name=self.name, daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """coro's result, run on the shared loop; safe from any thread, inside a running loop or not."""
        loop = self.loop()
        if in_running_loop() and asyncio.get_running_loop() is loop:
            raise RuntimeError(
                f"{self.name}: a blocking call from the shared loop's own thread would deadlock"
            )
        return asyncio.run_coroutine_threadsafe(coro, loop).result()
