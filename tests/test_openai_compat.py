"""The OpenAI-compatible door over real HTTP: the real `openai` client (sync and async, streamed and not)
against uvicorn on 127.0.0.1, the service tests' two tenants (tests/support/service_data.py), their hand-built namespaces.

With a model (a scripted OpenAI-compatible server, tests/support/fault_proxy.py), earlier turns are
condensed into the question asked, and a client that leaves a streamed reply stops the model's call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from deploy.local_cluster import free_port
from pipeline import prompts
from pipeline.service.chat_citations import Markers, MarkerStream, with_markers
from pipeline.service.queries import QueryService
from tests.conftest import REPO_ROOT
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.llm_engines import scripted_engine
from tests.support.serve_process import wait_ready
from tests.support.service_data import (
    KEY_A,
    KEY_B,
    ServiceData,
    offline_settings,
    serving,
)

QUESTION = "How is Scrooge related to Bob Cratchit?"
CHAT_MODES = ["basic", "local", "drift", "global", "lazy", "auto"]


def client_for(base_url: str, key: str = KEY_A) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key=key, max_retries=0, timeout=120)


def ask(model: str, question: str = QUESTION) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]


def sources(obj: Any) -> list[dict[str, Any]]:
    return (obj.model_extra or {}).get("sources") or []


def markers_in(text: str) -> set[int]:
    body = text.split("\n\nSources:\n", 1)[0]
    return {int(n) for n in re.findall(r"\[(\d+)\]", body)}


# ---- models --------------------------------------------------------------------------------------------
def test_models_lists_each_namespace_of_the_key_times_each_mode_that_answers(service_url: str) -> None:
    ids = sorted(m.id for m in client_for(service_url).models.list())
    expected = sorted(f"{ns}/{mode}" for ns in ("acme", "acme-empty") for mode in CHAT_MODES)
    assert ids == expected  # no chunks/vector (they return hits, not answers), no globex
    assert {m.id for m in client_for(service_url, KEY_B).models.list()} == {f"globex/{m}" for m in CHAT_MODES}


# ---- a completion, unstreamed ---------------------------------------------------------------------------
@pytest.mark.matrix(doors=("OpenAI door",), modes=("basic",))
def test_sync_completion_cites_with_markers_and_lists_its_sources(service_url: str) -> None:
    done = client_for(service_url).chat.completions.create(model="acme/basic", messages=ask("acme/basic"))
    text = done.choices[0].message.content or ""
    assert done.object == "chat.completion" and done.choices[0].finish_reason == "stop"
    assert "[Data:" not in text and "[1]" in text
    found = sources(done)
    assert found and [s["marker"] for s in found] == list(range(1, len(found) + 1))
    assert markers_in(text) == {s["marker"] for s in found}
    assert all(s["document_id"] == "doc-acme" and s["end_char"] > s["start_char"] for s in found)
    # the sources list is appended to the text, one line a marker
    for s in found:
        assert f"\n[{s['marker']}] {s['label']}" in text
    assert done.usage is not None and done.usage.total_tokens == 0  # offline: no model tokens


@pytest.mark.matrix(doors=("OpenAI door",), modes=("local", "global", "auto"))
@pytest.mark.parametrize("mode", ["local", "global", "auto"])
def test_every_answering_mode_cites_with_markers(service_url: str, mode: str) -> None:
    done = client_for(service_url).chat.completions.create(model=f"acme/{mode}", messages=ask(mode))
    text = done.choices[0].message.content or ""
    assert "[Data:" not in text and "[Communit" not in text
    assert markers_in(text) and markers_in(text) == {s["marker"] for s in sources(done)}


def test_async_completion(service_url: str) -> None:
    async def run() -> Any:
        async with openai.AsyncOpenAI(base_url=f"{service_url}/v1", api_key=KEY_A, max_retries=0) as client:
            return await client.chat.completions.create(model="acme/local", messages=ask("acme/local"))

    done = asyncio.run(run())
    assert "[1]" in (done.choices[0].message.content or "") and sources(done)


def test_offline_the_last_user_message_is_asked_alone(service_url: str) -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Who is Marley?"},
        {"role": "assistant", "content": "Scrooge's late partner [1]\n\nSources:\n[1] x"},
        {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
    ]
    done = client_for(service_url).chat.completions.create(model="acme/basic", messages=messages)  # type: ignore[arg-type]
    assert done.model_extra["graphrag"]["question"] == QUESTION


# ---- refusals --------------------------------------------------------------------------------------------
def test_another_tenants_namespace_is_refused_as_one_that_does_not_exist(service_url: str) -> None:
    client = client_for(service_url)
    bodies = {}
    for model in ("globex/basic", "no-such-namespace/basic"):
        with pytest.raises(openai.PermissionDeniedError) as refused:
            client.chat.completions.create(model=model, messages=ask(model))
        assert refused.value.status_code == 403
        bodies[model] = refused.value.body
    assert bodies["globex/basic"]["type"] == bodies["no-such-namespace/basic"]["type"] == "permission_error"
    assert "globex" not in json.dumps(client.models.list().model_dump())


@pytest.mark.parametrize("model", ["acme/vector", "acme/chunks", "acme/nosuch", "acme", "basic"])
def test_unknown_model_is_openais_404(service_url: str, model: str) -> None:
    with pytest.raises(openai.NotFoundError) as refused:
        client_for(service_url).chat.completions.create(model=model, messages=ask(model))
    assert refused.value.body["code"] == "model_not_found" and refused.value.body["param"] == "model"


def test_a_bad_request_is_openais_400(service_url: str) -> None:
    client = client_for(service_url)
    for messages in ([{"role": "assistant", "content": "hi"}], [{"role": "user", "content": "  "}]):
        with pytest.raises(openai.BadRequestError) as refused:
            client.chat.completions.create(model="acme/basic", messages=messages)  # type: ignore[arg-type]
        assert refused.value.body["type"] == "invalid_request_error"


def test_a_wrong_key_is_401(service_url: str) -> None:
    with pytest.raises(openai.AuthenticationError):
        client_for(service_url, "grk_wrong").models.list()


@pytest.mark.parametrize("param", ["api_key", "key", "access_token"])
def test_a_key_in_the_query_string_is_never_accepted(service_url: str, param: str) -> None:
    with httpx.Client(base_url=service_url, timeout=60) as http:
        assert http.get("/v1/models", params={param: KEY_A}).status_code == 401
        chat = {"model": "acme/basic", "messages": ask("acme/basic")}
        assert http.post("/v1/chat/completions", params={param: KEY_A}, json=chat).status_code == 401
        query = {"namespace": "acme", "question": QUESTION}
        assert http.post("/v1/query/basic", params={param: KEY_A}, json=query).status_code == 401
        # the same key in a header is good: the refusals above are about where it was
        assert http.get("/v1/models", headers={"Authorization": f"Bearer {KEY_A}"}).status_code == 200


# ---- CORS ------------------------------------------------------------------------------------------------
def preflight(http: httpx.Client, origin: str) -> httpx.Response:
    headers = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    return http.options("/v1/chat/completions", headers=headers)


def test_cors_is_closed_by_default(service_url: str) -> None:
    with httpx.Client(base_url=service_url, timeout=60) as http:
        assert "access-control-allow-origin" not in preflight(http, "http://127.0.0.1:3001").headers
        r = http.get(
            "/v1/models", headers={"Origin": "http://127.0.0.1:3001", "Authorization": f"Bearer {KEY_A}"}
        )
        assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_cors_answers_listed_origins_only(service_data: ServiceData) -> None:
    settings = offline_settings(service_data, service_cors_origins=["http://127.0.0.1:3001"])
    with (
        serving(QueryService(settings, embedder=service_data.embedder)) as url,
        httpx.Client(base_url=url) as http,
    ):
        listed = preflight(http, "http://127.0.0.1:3001")
        assert listed.status_code == 200
        assert listed.headers["access-control-allow-origin"] == "http://127.0.0.1:3001"
        assert "authorization" in listed.headers["access-control-allow-headers"].lower()
        unlisted = preflight(http, "http://127.0.0.1:6666")
        assert "access-control-allow-origin" not in unlisted.headers
        auth = {"Authorization": f"Bearer {KEY_A}"}
        r = http.get("/v1/models", headers={"Origin": "http://127.0.0.1:3001", **auth})
        assert r.headers["access-control-allow-origin"] == "http://127.0.0.1:3001"
        r = http.get("/v1/models", headers={"Origin": "http://127.0.0.1:6666", **auth})
        assert "access-control-allow-origin" not in r.headers


# ---- with a model: the conversation condensed --------------------------------------------------------------
CONDENSED = "How is Ebenezer Scrooge related to Bob Cratchit?"


class ScriptedModel:
    """Condenses any conversation into CONDENSED; answers basic search citing its first source."""

    def __init__(self) -> None:
        self.requests: dict[str, list[dict[str, Any]]] = {"condense": [], "answer": []}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        task = "condense" if system.startswith(prompts.CHAT_CONDENSE.system) else "answer"
        assert task == "condense" or system.startswith(prompts.BASIC_ANSWER.system), system[:80]
        with self.lock:
            self.requests[task].append(body)
        if task == "condense":
            return f"{CONDENSED}\n"
        return "Bob Cratchit is Scrooge's clerk [Data: Sources (1)]."


def is_answer(request: ProxyRequest) -> bool:
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", "")).startswith(prompts.BASIC_ANSWER.system)


@contextlib.contextmanager
def with_model(
    data: ServiceData, tmp_path: Path, **settings: Any
) -> Iterator[tuple[str, ScriptedModel, FaultProxy]]:
    """The service with the scripted model as its LLM provider: (base URL, model, proxy)."""
    model = ScriptedModel()
    with FaultProxy(None, responder=model) as proxy:
        svc = QueryService(
            offline_settings(data, **settings),
            embedder=data.embedder,
            engine_factory=lambda: scripted_engine(proxy.base_url, tmp_path),
        )
        with serving(svc) as url:
            yield url, model, proxy


@pytest.fixture
def model_service(
    service_data: ServiceData, tmp_path: Path
) -> Iterator[tuple[str, ScriptedModel, FaultProxy]]:
    with with_model(service_data, tmp_path) as served:
        yield served


CONVERSATION = [
    {"role": "user", "content": "Who is Ebenezer Scrooge?"},
    {"role": "assistant", "content": "A covetous old man [1].\n\nSources:\n[1] doc-acme, characters 0-40"},
    {"role": "user", "content": "How is he related to Bob Cratchit?"},
]


def test_with_a_model_earlier_turns_are_condensed_into_the_question(
    model_service: tuple[str, ScriptedModel, FaultProxy],
) -> None:
    url, model, _ = model_service
    done = client_for(url).chat.completions.create(model="acme/basic", messages=CONVERSATION)  # type: ignore[arg-type]
    assert done.model_extra["graphrag"]["question"] == CONDENSED
    [condense] = model.requests["condense"]
    prompt = condense["messages"][1]["content"]
    assert "User: Who is Ebenezer Scrooge?" in prompt and "Assistant: A covetous old man [1]." in prompt
    assert "Sources:" not in prompt  # the appended list is not part of the turn
    assert "Last question: How is he related to Bob Cratchit?" in prompt
    [answer] = model.requests["answer"]
    assert CONDENSED in answer["messages"][1]["content"]
    text = done.choices[0].message.content or ""
    assert text.startswith("Bob Cratchit is Scrooge's clerk [1].") and sources(done)[0]["marker"] == 1
    # both calls' tokens are the completion's usage
    assert done.usage is not None and done.usage.prompt_tokens > 0 and done.usage.completion_tokens > 0


def test_with_a_model_a_single_question_costs_no_condensing_call(
    model_service: tuple[str, ScriptedModel, FaultProxy],
) -> None:
    url, model, _ = model_service
    done = client_for(url).chat.completions.create(model="acme/basic", messages=ask("acme/basic"))
    assert model.requests["condense"] == [] and len(model.requests["answer"]) == 1
    assert done.model_extra["graphrag"]["question"] == QUESTION


# ---- markers as text streams in ----------------------------------------------------------------------------
ANSWER = (
    "Scrooge employs Bob [Data: Sources (2); Reports (7, +more)]. Marley [is] dead [Data: Sources (5, 2)]"
    " and [Community ID: 7] said [Communities: 9, 7]. A [bracket] and [Data: Entities (4)] end. ["
)


def test_markers_number_rows_in_order_of_first_citation() -> None:
    markers = Markers()
    text = with_markers(ANSWER, markers)
    assert text == (
        "Scrooge employs Bob [1][2]. Marley [is] dead [3][1] and [2] said [4][2]. A [bracket] and [5] end. ["
    )
    found = markers.sources([{"marker": 9, "section": "sources", "id": 2, "document_title": "carol.txt"}])
    assert [(s["marker"], s.get("resolved", True)) for s in found] == [
        (1, True), (2, False), (3, False), (4, False), (5, False),
    ]  # fmt: skip
    assert found[0]["label"] == "carol.txt" and found[1]["label"] == "Reports (7)"
    titled = markers.sources([{"section": "sources", "id": 2, "document_title": "A\nChristmas\r\n Carol"}])
    assert titled[0]["label"] == "A Christmas Carol"  # one line of the appended list


@pytest.mark.parametrize("size", [1, 2, 3, 7, 16])
def test_streamed_pieces_get_the_markers_the_whole_text_gets(size: int) -> None:
    stream = MarkerStream()
    out = [stream.feed(ANSWER[i : i + size]) for i in range(0, len(ANSWER), size)]
    assert not any("[Data" in piece or "[Comm" in piece for piece in out)
    assert "".join(out) + stream.finish() == with_markers(ANSWER, Markers())


# ---- `make serve` ---------------------------------------------------------------------------------------------
def test_serve_prints_the_address_to_open(service_data: ServiceData) -> None:
    """`make serve` runs graphrag-serve, whose first line is the address of the web app (host, port, path)."""
    port = free_port()
    env = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(service_data.storage_root),
        "PIPELINE_API_KEYS_FILE": str(service_data.keys_file),
    }
    cmd = [sys.executable, "-m", "pipeline.service", "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"graphrag-serve: the web app is at host 127.0.0.1, port {port}, path / "), (
            line
        )
        url = f"http://127.0.0.1:{port}/"
        wait_ready(url.rstrip("/"), proc)
        assert httpx.get(f"{url}healthz", timeout=30).json() == {"status": "ok"}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


# ---- streamed --------------------------------------------------------------------------------------------------
def test_sync_stream_gives_the_unstreamed_text_with_sources_and_usage_on_the_last_chunks(
    service_url: str,
) -> None:
    client = client_for(service_url)
    whole = client.chat.completions.create(model="acme/local", messages=ask("acme/local"))
    stream = client.chat.completions.create(
        model="acme/local", messages=ask("acme/local"), stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 2  # it came in pieces
    assert text == whole.choices[0].message.content
    [last] = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert sources(last) == sources(whole) and markers_in(text)
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # include_usage: OpenAI's usage chunk


def test_async_stream(service_url: str) -> None:
    async def run() -> list[Any]:
        async with openai.AsyncOpenAI(base_url=f"{service_url}/v1", api_key=KEY_A, max_retries=0) as client:
            stream = await client.chat.completions.create(
                model="acme/basic", messages=ask("basic"), stream=True
            )
            return [chunk async for chunk in stream]

    chunks = asyncio.run(run())
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "[1]" in text and "[Data:" not in text and "\n\nSources:\n[1] " in text
    assert chunks[-1].choices[0].finish_reason == "stop" and sources(chunks[-1])


def test_a_streamed_request_for_another_tenant_is_refused_before_any_event(service_url: str) -> None:
    with pytest.raises(openai.PermissionDeniedError):
        client_for(service_url).chat.completions.create(
            model="globex/basic", messages=ask("basic"), stream=True
        )


def test_the_sse_body_is_openais(service_url: str) -> None:
    chat = {"model": "acme/basic", "messages": ask("basic"), "stream": True}
    with httpx.Client(base_url=service_url, timeout=120) as http:
        r = http.post("/v1/chat/completions", json=chat, headers={"Authorization": f"Bearer {KEY_A}"})
    assert r.headers["content-type"].startswith("text/event-stream")
    events = r.text.split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""]
    assert all(e.startswith("data: ") for e in events[:-1])
    assert json.loads(events[0][len("data: ") :])["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
    }


def test_a_client_that_leaves_a_streamed_reply_stops_the_models_call(
    model_service: tuple[str, ScriptedModel, FaultProxy],
) -> None:
    url, _, proxy = model_service
    stalled = threading.Event()

    def answer_stalls(request: ProxyRequest) -> bool:
        if is_answer(request):
            stalled.set()  # under the proxy's lock, before it sends the stall's one token
            return True
        return False

    proxy.fault_when(answer_stalls, "stall")  # one token of the answer, then nothing until the caller closes
    chat = {"model": "acme/basic", "messages": ask("basic"), "stream": True}
    with (
        httpx.Client(base_url=url, timeout=120) as http,
        http.stream(
            "POST", "/v1/chat/completions", json=chat, headers={"Authorization": f"Bearer {KEY_A}"}
        ) as r,
    ):
        lines = r.iter_lines()  # kept: a dropped iterator closes the response, and the client is gone
        next(lines)  # the role chunk: the query runs (the door sends its text once it is done)
        assert stalled.wait(timeout=120)  # the model's call is in flight; leave
    proxy.wait_idle(timeout=60)  # the stalled call ends only when it is closed (the model times out at 120 s)
    assert proxy.stalls_closed == 1


# ---- the key's limits and the deadline hold at this door -----------------------------------------------------
def is_condense(request: ProxyRequest) -> bool:
    body = request.body if isinstance(request.body, dict) else {}
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content", "")).startswith(prompts.CHAT_CONDENSE.system)


@pytest.mark.parametrize("held_call", ["answer", "condense"])
def test_the_keys_concurrency_limit_holds_at_the_chat_door(
    model_service: tuple[str, ScriptedModel, FaultProxy], held_call: str
) -> None:
    """Two chats whose model call is held take the key's two slots (offline_settings), whether the
    call is the query's answer or the condensing of the conversation: a third is refused."""
    url, _, proxy = model_service
    held = proxy.hold(is_answer if held_call == "answer" else is_condense)
    answers: list[Any] = []

    def chat() -> None:
        try:
            done = client_for(url).chat.completions.create(model="acme/basic", messages=CONVERSATION)  # type: ignore[arg-type]
            answers.append(done)
        except Exception as exc:  # noqa: BLE001 - the assertion below shows it
            answers.append(exc)

    threads = [threading.Thread(target=chat) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        held.wait_held(2)
        with pytest.raises(openai.RateLimitError) as refused:
            client_for(url).chat.completions.create(model="acme/basic", messages=ask("b"))
        assert refused.value.body["code"] == "too_many_requests"
        assert refused.value.response.headers["retry-after"]
    finally:
        held.release()
        for t in threads:
            t.join()
    assert all(not isinstance(a, Exception) for a in answers), answers


def test_the_deadline_holds_at_the_chat_door(service_data: ServiceData, tmp_path: Path) -> None:
    with with_model(service_data, tmp_path, service_timeout_s=1.0) as (url, _, proxy):
        held = proxy.hold(is_answer)  # the answer never comes: the deadline certainly passes
        try:
            with pytest.raises(openai.APIStatusError) as late:
                client_for(url).chat.completions.create(model="acme/basic", messages=ask("b"))
        finally:
            held.release()
    assert late.value.status_code == 504 and late.value.body["code"] == "deadline_exceeded"
