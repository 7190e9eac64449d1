"""The LLM client against a real OpenAI-compatible server (llama.cpp + SmolLM2-135M) behind the fault proxy.

The proxy counts the requests that reach the server, so "served from the cache" and "retried" are
observed from outside the client, not from its own counters alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.llm import LLMCallError, LLMClient, LLMTimeoutError, LLMValidationError
from pipeline.llm.retry import Backoff
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer

CHAT = "/v1/chat/completions"


class Capital(BaseModel):
    city: str


def _messages(country: str = "France") -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You answer geography questions."},
        {"role": "user", "content": f"What is the capital of {country}?"},
    ]


@pytest.fixture
def proxy(llm_server: LlamaServer) -> Iterator[FaultProxy]:
    with FaultProxy(llm_server.base_url, retry_after_s=0.5, hang_s=30) as proxy:
        yield proxy


def _client(proxy: FaultProxy, tmp_path: Path, **overrides: Any) -> LLMClient:
    options = {
        "model": MODEL_ALIAS,
        "api_key": "test-key",
        "base_url": proxy.base_url,
        "timeout_s": 300,  # a slow answer from the real model on a loaded machine is not a fault
        "first_token_timeout_s": 300,
        "max_retries": 3,
        "max_tokens": 48,
        "json_mode": "auto",
        "cache": LLMCache(tmp_path / "llm.sqlite"),
        "backoff": Backoff(initial_s=0.05, max_s=0.5),
    }
    return LLMClient(**{**options, **overrides})


def _ask(client: LLMClient, country: str = "France") -> Capital:
    return client.run_sync(
        client.complete_json(_messages(country), Capital, task="capital", prompt_version="v1")
    )


def test_structured_call_validates_and_the_repeat_never_reaches_the_server(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    client = _client(proxy, tmp_path)
    first = _ask(client)
    assert isinstance(first, Capital) and first.city.strip()
    # llama.cpp rejects json_schema (HTTP 500 naming response_format): the client switched to json_object
    assert client.json_mode == "json_object"
    reached = proxy.forwarded

    second = _ask(client)
    assert second == first
    assert proxy.forwarded == reached
    assert client.usage.cache_hits == 1

    # a new client (a later run) on the same cache file pays nothing either
    later = _client(proxy, tmp_path)
    assert _ask(later) == first
    assert proxy.forwarded == reached
    assert later.usage.calls == 0 and later.usage.cache_hits == 1


def test_usage_counts_tokens_and_cost_from_the_price_table(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object", prices={MODEL_ALIAS: (1000.0, 2000.0)})
    _ask(client)
    usage = client.usage
    assert usage.calls == 1 and usage.requests == 1 and usage.failures == 0
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    expected = (usage.prompt_tokens * 1000.0 + usage.completion_tokens * 2000.0) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    meta = usage.as_metadata()
    assert meta["llm_calls"] == 1 and meta["llm_prompt_tokens"] == usage.prompt_tokens


class RecordingBackoff(Backoff):
    """The client's wait policy, recording each wait it hands the retry loop (seconds)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waits: list[float] = []

    def __call__(self, state: Any) -> float:
        wait = super().__call__(state)
        self.waits.append(wait)
        return wait


@pytest.mark.parametrize("fault", ["429", "500", "hang", "drop", "garble"])
def test_each_fault_is_retried_and_recovers(proxy: FaultProxy, tmp_path: Path, fault: str) -> None:
    backoff = RecordingBackoff(initial_s=0.05, max_s=0.5)
    with ExitStack() as stack:
        if fault == "hang":
            # Only the first-token timeout ends a hang, and the retry gets the same timeout: it is
            # answered by the proxy's canned completion (instant, however loaded the machine), not by
            # the model.
            proxy = stack.enter_context(FaultProxy(None, hang_s=30, canned_content='{"city": "Paris"}'))
            timeout_s = 5.0
        else:
            timeout_s = 120.0  # no request timeout is involved: none may fire
        client = _client(
            proxy,
            tmp_path,
            json_mode="json_object",
            timeout_s=timeout_s,
            first_token_timeout_s=timeout_s,
            backoff=backoff,
        )
        proxy.script(fault)
        answer = _ask(client)
    assert isinstance(answer, Capital)
    assert proxy.served == [(CHAT, fault), (CHAT, "ok")]
    assert client.usage.retries == 1 and client.usage.failures == 0
    assert len(backoff.waits) == 1
    if fault == "429":
        assert backoff.waits == [proxy.retry_after_s]  # it waited what Retry-After said
    else:
        assert 0.05 <= backoff.waits[0] <= 0.1  # its own backoff: initial_s plus up to initial_s of jitter


def test_a_fault_that_outlasts_the_retry_budget_ends_in_a_typed_error(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object", max_retries=2)
    proxy.script("500", "500", "500", "500")
    with pytest.raises(LLMCallError) as info:
        _ask(client)
    assert info.value.status == 500 and info.value.attempts == 3
    assert "PIPELINE_LLM_MAX_RETRIES" in str(info.value)
    assert proxy.forwarded == 0 and proxy.pending() == ["500"]
    assert client.usage.failures == 1
    assert client.cache is not None and client.cache.count() == 0


def test_hangs_beyond_the_retry_budget_end_in_a_timeout_error(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object", max_retries=1, first_token_timeout_s=0.5)
    proxy.script("hang", "hang")
    with pytest.raises(LLMTimeoutError, match="PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S"):
        _ask(client)
    assert proxy.forwarded == 0


def test_other_client_errors_are_not_retried(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object")
    proxy.script("401")
    with pytest.raises(LLMCallError) as info:
        _ask(client)
    assert info.value.status == 401 and info.value.attempts == 1
    assert "PIPELINE_LLM_API_KEY_ENV" in str(info.value)
    assert proxy.served == [(CHAT, "401")]


def test_json_in_fences_and_prose_is_repaired_without_asking_again(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object")
    proxy.script("wrap_content")
    assert isinstance(_ask(client), Capital)
    assert proxy.forwarded == 1


def test_an_invalid_reply_is_retried_once_with_the_error(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object")
    proxy.script("bad_content")
    assert isinstance(_ask(client), Capital)
    assert proxy.forwarded == 2  # the bad reply, then the repair
    assert client.usage.calls == 2 and client.usage.failures == 0


def test_a_reply_that_never_validates_is_recorded_as_a_failure(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path, json_mode="json_object")
    proxy.script("bad_content", "bad_content")

    async def ask(country: str) -> Capital:
        return await client.complete_json(_messages(country), Capital, task="capital", prompt_version="v1")

    [failed] = client.run_batch(["France"], ask)  # never raises for a failed item
    assert isinstance(failed, LLMValidationError)
    assert failed.raw.startswith("Sorry") and failed.error and failed.task == "capital"
    assert proxy.forwarded == 2  # the first reply and the one repair, no more
    assert client.usage.failures == 1
    assert client.cache is not None and client.cache.count() == 0  # nothing cached for it

    [fine] = client.run_batch(["Italy"], ask)
    assert isinstance(fine, Capital) and client.cache.count() == 1


def test_complete_text_is_cached_too(proxy: FaultProxy, tmp_path: Path) -> None:
    client = _client(proxy, tmp_path)
    messages = _messages("Spain")
    ask = client.complete_text(messages, task="capital_text", prompt_version="v1")
    text = client.run_sync(ask)
    assert text.strip()
    again = client.run_sync(client.complete_text(messages, task="capital_text", prompt_version="v1"))
    assert again == text and proxy.forwarded == 1
    bumped = client.complete_text(messages, task="capital_text", prompt_version="v2")
    client.run_sync(bumped)
    assert proxy.forwarded == 2  # a new prompt version is a new key


def test_concurrent_first_calls_in_auto_mode_probe_json_schema_once(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    # llama.cpp refuses json_schema; several first calls at once must not each be refused and retried.
    client = _client(proxy, tmp_path, concurrency=4, max_retries=0)

    async def ask(country: str) -> Capital:
        return await client.complete_json(_messages(country), Capital, task="capital", prompt_version="v1")

    results = client.run_batch(["France", "Spain", "Italy", "Japan"], ask)
    assert all(isinstance(r, Capital) for r in results), results
    assert client.json_mode == "json_object"
    assert proxy.forwarded == 5  # one refused probe, then the four answers
