"""Batches of LLM calls: concurrency limit, cancellation and deadlines.

The upstream here is the fault proxy's canned responder (instant, or hanging when scripted to): these
tests are about the client's scheduling, and a real model would only make their timing noisier.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pipeline.llm import (
    LLMCache,
    LLMCancelledError,
    LLMClient,
    LLMTimeoutError,
    deadline_in,
)
from pipeline.llm.retry import Backoff
from pipeline.llm.structured import parse_reply
from tests.support.fault_proxy import FaultProxy


class Summary(BaseModel):
    summary: str


@pytest.fixture
def slow_proxy() -> Iterator[FaultProxy]:
    with FaultProxy(None, latency_s=0.3, hang_s=30) as proxy:
        yield proxy


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy(None, hang_s=30) as proxy:
        yield proxy


def _client(proxy: FaultProxy, tmp_path: Path, concurrency: int = 8) -> LLMClient:
    return LLMClient(
        model="canned",
        api_key="test",
        base_url=proxy.base_url,
        timeout_s=10,
        max_retries=2,
        concurrency=concurrency,
        json_mode="json_object",
        cache=LLMCache(tmp_path / "llm.sqlite"),
        backoff=Backoff(0.05, 0.2),
    )


def _call(client: LLMClient, i: int, **kw: Any) -> Coroutine[Any, Any, Summary]:
    messages = [{"role": "user", "content": f"item {i}"}]
    return client.complete_json(messages, Summary, task="t", prompt_version="v1", **kw)


def test_concurrency_limit_is_respected(slow_proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(slow_proxy, tmp_path, concurrency=3)
    results = client.run_batch(list(range(9)), lambda i: _call(client, i))
    assert all(isinstance(r, Summary) for r in results)
    assert slow_proxy.received == 9
    assert slow_proxy.max_in_flight == 3


def test_cancelling_a_batch_of_20_returns_within_1s_and_caches_only_whole_entries(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    proxy.script(*["ok"] * 8, *["hang"] * 12)  # one wave answers, the next hangs in flight
    client = _client(proxy, tmp_path, concurrency=8)
    cancel = threading.Event()  # set from another thread, as a terminating Dagster run would
    threading.Timer(0.6, cancel.set).start()
    started = time.monotonic()
    results = client.run_batch(list(range(20)), lambda i: _call(client, i), cancel=cancel)
    after_cancel = time.monotonic() - started - 0.6
    assert after_cancel < 1.0

    done = [r for r in results if isinstance(r, Summary)]
    cancelled = [r for r in results if isinstance(r, LLMCancelledError)]
    assert len(done) + len(cancelled) == 20
    assert cancelled, "the batch was cancelled while calls were still queued"
    # queued calls never reached the server: at most one wave of 8 was in flight when it was cancelled
    received = proxy.received
    assert received <= len(done) + 8
    time.sleep(0.5)
    assert proxy.received == received

    assert client.cache is not None and client.cache.count() == len(done)
    with sqlite3.connect(client.cache.path) as conn:  # read the file as another process would
        for (response,) in conn.execute("SELECT response FROM responses"):
            parse_reply(response, Summary)  # every stored entry is whole and valid


def test_cancel_with_an_asyncio_event_stops_in_flight_calls(proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.script(*["hang"] * 4)
    client = _client(proxy, tmp_path, concurrency=4)

    async def scenario() -> tuple[list, float]:
        cancel = asyncio.Event()
        asyncio.get_running_loop().call_later(0.3, cancel.set)
        t0 = time.monotonic()
        results = await client.map(list(range(4)), lambda i: _call(client, i), cancel=cancel)
        return results, time.monotonic() - t0 - 0.3

    results, after_cancel = client.run_sync(scenario())
    assert all(isinstance(r, LLMCancelledError) for r in results)
    assert after_cancel < 1.0


def test_a_batch_deadline_times_out_what_is_unfinished(proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.script("ok", "ok", *["hang"] * 10)
    client = _client(proxy, tmp_path, concurrency=2)
    started = time.monotonic()
    # Generous margins: instant canned calls can take a second or two on a loaded 2-core CI machine.
    results = client.run_batch(list(range(12)), lambda i: _call(client, i), deadline=deadline_in(6.0))
    assert time.monotonic() - started < 9.0  # not the 30 s the hanging calls would take
    assert [type(r) for r in results[:2]] == [Summary, Summary]
    assert all(isinstance(r, LLMTimeoutError) for r in results[2:])


def test_a_call_deadline_cuts_a_hanging_request(proxy: FaultProxy, tmp_path: Path) -> None:
    proxy.script("hang")
    client = _client(proxy, tmp_path)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        client.run_sync(_call(client, 0, deadline=deadline_in(0.5)))
    assert time.monotonic() - started < 1.5
    assert client.usage.failures == 1
