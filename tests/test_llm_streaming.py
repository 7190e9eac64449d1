"""Streamed chat replies: two clocks instead of one total timeout, no retry storms, servers that do not
stream, thinking models.

Everything goes through the real `openai` client to a real HTTP server on 127.0.0.1: the scripted one
(tests/support/fault_proxy.py, which streams server-sent events as OpenAI does) or, for the long
generation, llama.cpp serving SmolLM2-135M behind that proxy, which relays its stream chunk by chunk and
counts the requests that reach it.

Faults are events, not times: a `stall` stream sends one token and then nothing until the client
closes it, so only the idle clock can end the call; the proxy's event list shows each stalled stream
closed before anything was sent again.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import BaseModel

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.llm import LLMClient, LLMTimeoutError
from pipeline.llm.reply import split_reasoning
from pipeline.ops.extraction.models import ExtractionOptions
from pipeline.ops.extraction.run import extract_graph
from pipeline.runtime import make_engine, make_llm_client
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.graph_model import ScriptedGraphModel
from tests.support.llm_server import MODEL_ALIAS, LlamaServer
from tests.support.scripted_llm import scripted_client, scripted_settings

CHAT = "/v1/chat/completions"
TEXT = "Marie Curie met Pierre Curie in Paris. Pierre Curie taught at the Sorbonne with Paul Langevin."


class Capital(BaseModel):
    city: str


def _extract(settings: Settings):
    units = pa.table({"id": ["unit-0"], "document_id": ["doc-0"], "text": [TEXT], "start_char": [0]})
    engine = make_engine(settings)
    return extract_graph(units, ExtractionOptions.from_settings(settings), engine), engine.usage


def _ask(client: LLMClient, country: str) -> Capital:
    messages = [{"role": "user", "content": f"What is the capital of {country}?"}]
    return client.run_sync(client.complete_json(messages, Capital, task="capital", prompt_version="v1"))


# ---- the idle clock -------------------------------------------------------------------------------
def test_a_stream_held_open_without_tokens_fails_at_the_idle_timeout_and_is_recorded(tmp_path: Path) -> None:
    with FaultProxy(None, responder=ScriptedGraphModel()) as proxy:
        proxy.script("stall", "stall")  # the first attempt and its one retry: one token, then silence
        # only the idle clock is short: the first token comes at once, and nothing else ever ends a stall
        settings = scripted_settings(
            tmp_path,
            proxy.base_url,
            llm_idle_timeout_s=0.5,
            llm_first_token_timeout_s=600,
            llm_timeout_s=600,
            llm_max_retries=1,
        )
        run, usage = _extract(settings)
        proxy.wait_idle()
    [failure] = run.failures
    assert run.units[0].status == "failed" and failure.error_type == "LLMTimeoutError"
    assert "no token for 0.5s" in failure.reason and "PIPELINE_LLM_IDLE_TIMEOUT_S" in failure.reason
    # each stalled stream was closed by the client before anything was sent again
    assert proxy.events == ["received 1", "stall 1 closed", "received 2", "stall 2 closed"]
    assert usage.retries == 1 and usage.failures == 1


def test_a_server_that_never_answers_fails_at_the_first_token_timeout(tmp_path: Path) -> None:
    with FaultProxy(None, hang_s=600) as proxy:
        proxy.script("hang")  # no headers, no token: until the client gives up
        client = scripted_client(proxy.base_url, tmp_path, first_token_timeout_s=0.5, timeout_s=600)
        with pytest.raises(LLMTimeoutError, match="no first token for 0.5s.*FIRST_TOKEN_TIMEOUT_S"):
            _ask(client, "France")
        assert proxy.received == 1


# ---- no retry storms ---------------------------------------------------------------------------------
def test_a_whole_reply_that_times_out_at_a_local_server_is_not_sent_again(tmp_path: Path) -> None:
    with FaultProxy(None, hang_s=600) as proxy:
        proxy.script("hang")
        client = scripted_client(proxy.base_url, tmp_path, stream=False, timeout_s=0.5, max_retries=3)
        with pytest.raises(LLMTimeoutError, match="not sent again"):
            _ask(client, "France")
        assert proxy.received == 1 and client.usage.retries == 0


def test_a_local_server_gets_one_request_at_a_time_unless_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    local = scripted_settings(tmp_path, "http://127.0.0.1:8080/v1")
    assert make_llm_client(local, cache=False).concurrency == 1
    assert make_llm_client(local.with_overrides(llm_concurrency=4), cache=False).concurrency == 4
    openai_api = local.model_copy(update={"llm_base_url": None})
    assert make_llm_client(openai_api, cache=False).concurrency == 8


# ---- a server that does not stream --------------------------------------------------------------------
def test_a_server_that_does_not_stream_is_read_whole_said_once_and_asked_whole_after(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    asked: list[bool] = []

    def plain(request: ProxyRequest) -> bool:
        asked.append(bool(request.body.get("stream")))
        return True  # every request: the whole JSON completion, whatever it asked for

    with FaultProxy(None, canned_content='{"city": "Paris"}') as proxy:
        proxy.fault_when(plain, "plain")
        client = scripted_client(proxy.base_url, tmp_path)
        with caplog.at_level(logging.WARNING, logger="pipeline.llm.transport"):
            answers = [_ask(client, country) for country in ("France", "Spain", "Italy")]
    assert answers == [Capital(city="Paris")] * 3
    assert proxy.received == 3  # the first whole reply was used, not asked again
    assert asked == [True, False, False]
    said = [r for r in caplog.records if "does not stream" in r.getMessage()]
    assert len(said) == 1 and "PIPELINE_LLM_TIMEOUT_S" in said[0].getMessage()


# ---- thinking models ----------------------------------------------------------------------------------
def test_a_thinking_reply_parses_into_the_same_records_as_the_plain_one(tmp_path: Path) -> None:
    thought = "The user wants entities. Marie Curie is a person; so is Pierre Curie. " * 5
    model = ScriptedGraphModel()
    replies = {
        "plain": model,
        "think_tag": lambda request: f"<think>\n{thought}\n</think>\n\n{model(request)}",
        "opened_in_prompt": lambda request: f"{thought}</think>{model(request)}",
        "reasoning_content": lambda request: {"reasoning_content": thought, "content": model(request)},
    }
    results = {}
    for name, responder in replies.items():
        with FaultProxy(None, responder=responder) as proxy:
            run, usage = _extract(scripted_settings(tmp_path / name, proxy.base_url))
        [unit] = run.units
        assert unit.status == "ok", run.failures
        results[name] = (unit.entities, unit.relationships, usage.reasoning_tokens)
        cache = LLMCache(tmp_path / name / "storage" / "_cache" / "llm.sqlite")
        assert cache.count() == 1
    plain_entities, plain_relationships, plain_reasoning = results.pop("plain")
    assert plain_entities and plain_reasoning == 0
    for entities, relationships, reasoning_tokens in results.values():
        assert (entities, relationships) == (plain_entities, plain_relationships)
        assert reasoning_tokens > 50  # the thought's tokens are counted


def test_reasoning_is_split_off_whatever_form_it_takes() -> None:
    answer = json.dumps({"city": "Paris"})
    assert split_reasoning(answer) == (answer, "")
    assert split_reasoning(f"  <think>hmm</think>\n{answer}") == (answer, "hmm")
    assert split_reasoning(f"hmm</think>{answer}") == (answer, "hmm")
    assert split_reasoning("<think>still thinking when cut off") == ("", "still thinking when cut off")
    # a tag quoted inside an answer is not a thought
    quoted = json.dumps({"city": "<think>Paris</think>"})
    assert split_reasoning(quoted) == (quoted, "")


# ---- the real model: a generation longer than the old total timeout -----------------------------------
def test_a_generation_longer_than_the_total_timeout_completes_while_tokens_flow(
    llm_server: LlamaServer, tmp_path: Path
) -> None:
    """SmolLM2 on one thread writes `LIMIT` tokens (its end-of-turn tokens banned, so it never stops
    early). Asked for a whole reply under a `TOTAL` s timeout, it times out: the generation takes longer
    than that (an event, not a measured time). Streamed under the same settings, it completes."""
    TOTAL, LIMIT = 1.0, 256
    messages = [{"role": "user", "content": "Tell me a long story about a lighthouse keeper."}]
    # <|endoftext|>, <|im_start|>, <|im_end|>: SmolLM2's special tokens
    params = {"temperature": 0.0, "max_tokens": LIMIT, "logit_bias": {"0": -100, "1": -100, "2": -100}}
    with FaultProxy(llm_server.base_url) as proxy:
        streamed = scripted_client(
            proxy.base_url,
            tmp_path,
            model=MODEL_ALIAS,
            timeout_s=TOTAL,
            first_token_timeout_s=600,  # the server may still be busy with another test's request
            idle_timeout_s=60,
        )
        reply = streamed.run_sync(streamed.transport.chat(messages, params, "story", None))
        assert proxy.served == [(CHAT, "ok")]  # received once, never sent again
        [relay] = proxy.relayed
        assert not relay.client_closed and relay.chunks > 1  # tokens arrived as they were generated
        # it ran to max_tokens; this server sends no usage in a stream, so tokens are counted by tiktoken
        assert reply.finish_reason == "length" and reply.completion_tokens > LIMIT // 2

        whole = scripted_client(proxy.base_url, tmp_path, model=MODEL_ALIAS, timeout_s=TOTAL, stream=False)
        with pytest.raises(LLMTimeoutError, match="not sent again"):
            whole.run_sync(whole.transport.chat(messages, params, "story", None))
        assert proxy.served == [(CHAT, "ok"), (CHAT, "ok")]
