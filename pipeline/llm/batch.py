"""Deadlines, cancellation and settled batches for LLM calls.

A deadline is an absolute `time.monotonic()` value (make one with `deadline_in(seconds)`), so that a
batch's deadline can be handed unchanged to every call in it. A cancel signal is an `asyncio.Event`,
or a `threading.Event` when it is set from another thread (a Dagster run being terminated, a UI).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError

T = TypeVar("T")
R = TypeVar("R")
CancelSignal = asyncio.Event | threading.Event

_POLL_S = 0.02  # how often a threading.Event is looked at; well inside the 1 s cancellation promise


def deadline_in(seconds: float) -> float:
    """An absolute deadline `seconds` from now."""
    return time.monotonic() + seconds


def remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def is_cancelled(cancel: CancelSignal | None) -> bool:
    return cancel is not None and cancel.is_set()


CANCELLED = "cancelled"  # what `stopped` says of a cancelled call (else the deadline passed)


def stopped(cancel: CancelSignal | None, deadline: float | None) -> str | None:
    """Why work must not start now ("cancelled", "deadline passed"), or None."""
    if is_cancelled(cancel):
        return CANCELLED
    if deadline is not None and time.monotonic() >= deadline:
        return "deadline passed"
    return None


async def wait_for_signal(cancel: CancelSignal) -> None:
    if isinstance(cancel, asyncio.Event):
        await cancel.wait()
        return
    while not cancel.is_set():
        await asyncio.sleep(_POLL_S)


async def _stop_work(work: asyncio.Future[Any]) -> None:
    """Cancel in-flight work and let it unwind (an HTTP request closes its connection)."""
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await work


async def run_guarded(
    coro: Coroutine[Any, Any, T],
    *,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    what: str = "LLM call",
    task: str | None = None,
) -> T:
    """Await `coro` unless the deadline passes or `cancel` is set first (LLMTimeoutError/LLMCancelledError)."""
    if is_cancelled(cancel):
        coro.close()
        raise LLMCancelledError(f"{what} cancelled before it started", task=task)
    if deadline is None and cancel is None:
        return await coro
    work = asyncio.ensure_future(coro)
    stop = asyncio.ensure_future(wait_for_signal(cancel)) if cancel is not None else None
    try:
        waiters = {work} if stop is None else {work, stop}
        await asyncio.wait(waiters, timeout=remaining(deadline), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await _stop_work(work)
        raise
    finally:
        if stop is not None:
            stop.cancel()
    if work.done():
        return work.result()
    await _stop_work(work)
    if is_cancelled(cancel):
        raise LLMCancelledError(f"{what} cancelled", task=task)
    raise LLMTimeoutError(f"{what} did not finish before its deadline", task=task)


async def gather_settled(
    items: Sequence[T],
    fn: Callable[[T], Awaitable[R]],
    *,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> list[R | LLMError]:
    """`fn(item)` for every item, concurrently; one result or LLMError per item, in order.

    Concurrency is bounded where the requests are made (the client's limit), so queued items cost
    nothing. Cancelling stops queued items at once and in-flight ones promptly; an item still
    unfinished at the deadline gets an LLMTimeoutError. Errors other than LLMError are bugs and raise.
    """
    if not items:
        return []
    tasks = [asyncio.ensure_future(_as_coroutine(fn, item)) for item in items]
    everything = asyncio.gather(*tasks, return_exceptions=True)
    stop = asyncio.ensure_future(wait_for_signal(cancel)) if cancel is not None else None
    try:
        waiters = {everything} if stop is None else {everything, stop}
        await asyncio.wait(waiters, timeout=remaining(deadline), return_when=asyncio.FIRST_COMPLETED)
        if not everything.done():
            for t in tasks:
                t.cancel()
        outcomes = await everything
    except asyncio.CancelledError:
        for t in tasks:
            t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await everything
        raise
    finally:
        if stop is not None:
            stop.cancel()
    results: list[R | LLMError] = []
    for outcome in outcomes:
        if isinstance(outcome, asyncio.CancelledError):
            results.append(
                LLMCancelledError("batch cancelled before this item finished")
                if is_cancelled(cancel)
                else LLMTimeoutError("batch deadline passed before this item finished")
            )
        elif isinstance(outcome, LLMError):
            results.append(outcome)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            results.append(outcome)
    return results


class Batches:
    """`run_batch` for whatever runs a coroutine to its end (`run_sync`): the LLM client, the engines."""

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """One coroutine to its end, on the loop this object's calls run on."""
        raise NotImplementedError

    def run_batch(
        self,
        items: Sequence[T],
        fn: Callable[[T], Awaitable[R]],
        *,
        deadline: float | None = None,
        cancel: CancelSignal | None = None,
    ) -> list[R | LLMError]:
        """`gather_settled` for code that is not async (asset bodies): a result or the `LLMError` that
        ended it, per item; never raises because some items failed."""
        return self.run_sync(gather_settled(items, fn, deadline=deadline, cancel=cancel))


async def _as_coroutine(fn: Callable[[T], Awaitable[R]], item: T) -> R:
    return await fn(item)
