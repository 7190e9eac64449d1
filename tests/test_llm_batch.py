"""Batches of LLM calls: concurrency limit, cancellation and deadlines.

The upstream here is the fault proxy's canned responder: these tests are about the client's
scheduling, and a real model would only make them slower. Nothing here depends on how fast the machine
is: a call is "in flight" because the proxy holds its request unanswered (`FaultProxy.hold`) until the
test has cancelled the batch or the deadline has cut it, and the client's own request timeout is far
longer than any wait here, so only the mechanism under test can end a held call.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
from pydantic import BaseModel

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.llm import LLMCancelledError, LLMClient, LLMTimeoutError, deadline_in
from pipeline.llm.batch import gather_settled
from pipeline.llm.retry import Backoff
from pipeline.llm.structured import parse_reply
from tests.support.fault_proxy import FaultProxy, Hold


class Summary(BaseModel):
    summary: str


# Generous: it only bounds how long a broken client could make a test hang, never what passes.
WAIT_S = 60.0
# Longer than any test here: a held request can only end by cancellation or a deadline.
NEVER_S = 600.0


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy(None, hang_s=30) as proxy:
        yield proxy


def _client(proxy: FaultProxy, tmp_path: Path, concurrency: int = 8, timeout_s: float = NEVER_S) -> LLMClient:
    return LLMClient(
        model="canned",
        api_key="test",
        base_url=proxy.base_url,
        timeout_s=timeout_s,
        max_retries=2,
        concurrency=concurrency,
        json_mode="json_object",
        cache=LLMCache(tmp_path / "llm.sqlite"),
        backoff=Backoff(0.05, 0.2),
    )


def _call(client: LLMClient, i: int, **kw: Any) -> Coroutine[Any, Any, Summary]:
    messages = [{"role": "user", "content": f"item {i}"}]
    return client.complete_json(messages, Summary, task="t", prompt_version="v1", **kw)


@contextmanager
def _background(hold: Hold, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Iterator[Future]:
    """`fn` in a thread of its own; on the way out the hold is released so the thread can end."""
    pool = ThreadPoolExecutor(1)
    try:
        yield pool.submit(fn, *args, **kwargs)
    finally:
        hold.release()
        pool.shutdown(wait=True)


def _open_connections_to(proxy: FaultProxy) -> list:
    """This process's open TCP connections to the proxy (the client's side of them)."""
    port = urlsplit(proxy.base_url).port
    return [
        c
        for c in psutil.Process().net_connections("tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    ]


def test_concurrency_limit_is_respected(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, concurrency=3)
    hold = proxy.hold()  # no request is answered until the test says so
    with _background(hold, client.run_batch, list(range(9)), lambda i: _call(client, i)) as batch:
        hold.wait_held(3, WAIT_S, alive=lambda: not batch.done())
        # three calls are in flight and none of them can finish: a fourth would be in flight too
        assert proxy.in_flight == 3
        hold.release()
        results = batch.result(WAIT_S)
    assert all(isinstance(r, Summary) for r in results)
    assert proxy.received == 9
    assert proxy.max_in_flight == 3


def test_cancelling_a_batch_of_20_stops_it_at_once_and_caches_only_whole_entries(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    client = _client(proxy, tmp_path, concurrency=8)
    hold = proxy.hold(from_nth=9)  # the first wave of 8 is answered, the second is held in flight
    cancel = threading.Event()  # set from another thread, as a terminating Dagster run would
    work = client.run_batch, list(range(20)), lambda i: _call(client, i)
    with _background(hold, *work, cancel=cancel) as batch:
        hold.wait_held(8, WAIT_S, alive=lambda: not batch.done())
        cancel.set()
        # the batch ends while its 8 requests are still unanswered: cancelling did not wait for them
        results = batch.result(WAIT_S)
        assert not hold.released
        assert _open_connections_to(proxy) == []  # the in-flight requests were abandoned, not kept

    done = [r for r in results if isinstance(r, Summary)]
    cancelled = [r for r in results if isinstance(r, LLMCancelledError)]
    # all 8 slots were held by the second wave, so the first wave had finished (and been cached)
    assert len(done) == 8 and len(cancelled) == 12
    # the 4 queued calls never reached the server
    assert proxy.received == 16
    proxy.wait_idle(WAIT_S)  # the held requests, released, are answered to nobody
    assert proxy.received == 16  # and nothing was asked again

    assert client.cache is not None and client.cache.count() == len(done)
    with sqlite3.connect(client.cache.path) as conn:  # read the file as another process would
        for (response,) in conn.execute("SELECT response FROM responses"):
            parse_reply(response, Summary)  # every stored entry is whole and valid


def test_cancel_with_an_asyncio_event_stops_in_flight_calls(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, concurrency=4)
    hold = proxy.hold()

    async def scenario() -> tuple[list, bool, int]:
        cancel = asyncio.Event()
        batch = asyncio.ensure_future(
            gather_settled(list(range(4)), lambda i: _call(client, i), cancel=cancel)
        )
        await asyncio.to_thread(hold.wait_held, 4, WAIT_S, lambda: not batch.done())
        cancel.set()
        results = await asyncio.wait_for(batch, WAIT_S)
        # still held: the calls ended because they were cancelled, not because they were answered
        return results, hold.released, len(_open_connections_to(proxy))

    try:
        results, released, still_open = client.run_sync(scenario())
    finally:
        hold.release()
    assert all(isinstance(r, LLMCancelledError) for r in results)
    assert not released and proxy.received == 4
    assert still_open == 0  # each cancelled request closed its connection


def test_a_batch_deadline_times_out_what_is_unfinished(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, concurrency=2)
    # Items 0 and 1 are work finished before the deadline: answered once, the batch finds them cached.
    finished = client.run_batch([0, 1], lambda i: _call(client, i))
    assert all(isinstance(r, Summary) for r in finished) and proxy.received == 2
    proxy.reset_counts()
    hold = proxy.hold()  # nothing more is answered: the other items can only end at the deadline
    work = client.run_batch, list(range(12)), lambda i: _call(client, i)
    with _background(hold, *work, deadline=deadline_in(1.0)) as batch:
        results = batch.result(WAIT_S)
        assert not hold.released  # the batch ended with its requests unanswered: the deadline cut them
    assert results[:2] == finished and client.usage.cache_hits == 2
    assert all(isinstance(r, LLMTimeoutError) and "deadline" in str(r) for r in results[2:]), results
    assert proxy.received <= 2  # at most the two calls the limit let through; nothing retried


def test_a_call_deadline_cuts_a_hanging_request(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path)
    hold = proxy.hold()  # the request is never answered

    def call() -> Summary:
        return client.run_sync(_call(client, 0, deadline=deadline_in(0.5)))

    with _background(hold, call) as pending:
        with pytest.raises(LLMTimeoutError, match="deadline"):
            pending.result(WAIT_S)
        assert not hold.released
    assert proxy.received <= 1  # not retried after the deadline
    assert client.usage.failures == 1
