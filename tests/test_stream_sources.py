"""Where a streamed answer's events come from: the model's answer call, streamed token by token through
the `openai` client (`stream=True`) to the scripted OpenAI-compatible server on 127.0.0.1, which sends
each reply as server-sent chunks of a few characters (tests/support/sse.py); the same text from the
cache; a thinking model's reasoning held back; and auto's route.

The deltas are what the query's scope heard (`QueryScope.events`); they must join to the answer the
result holds, whichever way the text arrived.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from pipeline.io.store import NamespaceStore
from pipeline.llm.stream import Written
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.query.local.search import LocalSearchConfig, local_search_async
from pipeline.service.queries import QueryService
from tests.support.event_stream import parse
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_engines import scripted_engine
from tests.support.scripted_local_model import QUESTION, ScriptedModel
from tests.support.service_data import KEY_A, ServiceData, auth, offline_settings, serving
from tests.support.sse import PIECE_CHARS

Heard = list[tuple[str, dict[str, Any]]]


def deltas(heard: Heard) -> list[str]:
    return [d["text"] for k, d in heard if k == ev.DELTA]


def local_with_events(
    store: NamespaceStore, embedder: Any, base_url: str, tmp_path: Path
) -> tuple[Any, Heard]:
    heard: Heard = []
    engine = scripted_engine(base_url, tmp_path)  # the same cache file for every call of one test
    scope = registry.scope(store, engine, embedder, events=lambda kind, data: heard.append((kind, data)))
    result = engine.run_sync(local_search_async(scope, QUESTION, LocalSearchConfig()))
    return result, heard


def test_a_model_answer_streams_as_its_tokens_arrive_then_whole_from_the_cache(
    tiny: NamespaceStore, embedder: Any, tmp_path: Path
) -> None:
    model = ScriptedModel()
    with FaultProxy(None, responder=model) as proxy:
        result, heard = local_with_events(tiny, embedder, proxy.base_url, tmp_path)
        assert result.status == "completed" and result.answer
        pieces = deltas(heard)
        # One delta per chunk the server sent: the answer arrived in pieces, not whole at the end.
        assert len(pieces) == -(-len(result.answer) // PIECE_CHARS) > 1
        assert "".join(pieces) == result.answer
        # Asked again: the cached answer, whole, in one delta; the server is not asked.
        again, heard_again = local_with_events(tiny, embedder, proxy.base_url, tmp_path)
    assert len(model.requests["answer"]) == 1
    assert again.answer == result.answer and deltas(heard_again) == [result.answer]
    kinds = [k for k, _ in heard]
    assert kinds.index(ev.CONTEXT) < kinds.index(ev.DELTA)  # the sources before the answer


def test_the_json_calls_of_a_query_send_no_deltas(
    tiny: NamespaceStore, embedder: Any, tmp_path: Path
) -> None:
    """The question parse and the community selection are model calls too; only the answer is text."""
    model = ScriptedModel(answer=lambda user: "Only this.")
    with FaultProxy(None, responder=model) as proxy:
        result, heard = local_with_events(tiny, embedder, proxy.base_url, tmp_path)
    assert model.requests["intent"] and model.requests["select"]
    assert deltas(heard) == ["Only this."] == [result.answer]


def test_a_thinking_models_reasoning_is_not_sent_and_a_retry_sends_only_what_is_new() -> None:
    sent: list[str] = []
    written = Written(sent.append)
    written.start()
    for piece in ["<thi", "nk>weighing", " it</think>", "\n\nThe answer", " is 42."]:
        written.add(piece)
    assert "".join(sent) == "The answer is 42."
    # The stream stalled after "The answer" was sent and the call was asked again: the retry's text is
    # sent from where the first attempt left off, nothing twice.
    retried: list[str] = []
    again = Written(retried.append)
    again.start()
    again.add("The answer")
    again.start()
    for piece in ["The ans", "wer is", " 42."]:
        again.add(piece)
    assert retried == ["The answer", " is", " 42."]


# ---- over HTTP: a model-backed query streamed to the client -------------------------------------------------


def test_a_model_answer_streams_to_the_http_client_chunk_by_chunk(
    service_data: ServiceData, tmp_path: Path
) -> None:
    model = ScriptedModel()
    with FaultProxy(None, responder=model) as proxy:
        service = QueryService(
            offline_settings(service_data, service_max_evidence_items=50),
            embedder=service_data.embedder,
            engine_factory=lambda: scripted_engine(proxy.base_url, tmp_path),
        )
        body = {"namespace": "acme", "question": QUESTION, "stream": True}
        with serving(service) as url, httpx.Client(base_url=url, timeout=120) as http:
            events = parse(http.post("/v1/query/local", json=body, headers=auth(KEY_A)).text)
    done = events[-1][1]
    answer = done["result"]["answer"]
    assert events[-1][0] == ev.DONE and done["status"] == "completed"
    texts = [d["text"] for k, d in events if k == ev.DELTA]
    assert "".join(texts) == answer and len(texts) == -(-len(answer) // PIECE_CHARS)
    assert [d for k, d in events if k == ev.CITATION] == done["citations"] != []


def test_auto_sends_its_route_and_reason_before_the_routed_modes_events(service_data: ServiceData) -> None:
    service = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    principal = service.keys.authenticate(KEY_A)
    from pipeline.service.models import bodies

    for question in ("Summarize the story as a whole.", QUESTION):
        request = bodies()["auto"](namespace="acme", question=question)

        async def heard(request: Any = request) -> Heard:
            return [e async for e in service.stream(principal, request)]

        got = asyncio.run(heard())
        routes = [d for k, d in got if k == ev.ROUTE]
        result = got[-1][1]["result"]
        assert routes == [{"mode": "auto", "route": result["route"], "reason": result["reason"]}]
        assert got[0][0] == ev.ROUTE and result["reason"]
        # offline auto compares the passage modes: only the kept one's context is sent
        contexts = [k for k, _ in got if k == ev.CONTEXT]
        assert len(contexts) == 1, json.dumps([k for k, _ in got])


def test_the_real_local_model_server_streams_an_answer_token_by_token(
    llm_server: Any, tmp_path: Path
) -> None:
    """llama.cpp (SmolLM2-135M, the tests' local OpenAI-compatible server) answers `stream=True` with
    one chunk per token: the text is heard in many pieces that join to the reply."""
    from tests.support.llm_server import MODEL_ALIAS
    from tests.support.scripted_llm import scripted_client

    client = scripted_client(
        llm_server.base_url, tmp_path, model=MODEL_ALIAS, first_token_timeout_s=600, idle_timeout_s=60
    )
    pieces: list[str] = []
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one short sentence."}]
    text = client.run_sync(
        client.complete_text(
            messages, task="answer", prompt_version="v1", max_tokens=128, on_text=pieces.append
        )
    )
    assert text and len(pieces) > 1 and "".join(pieces) == text
