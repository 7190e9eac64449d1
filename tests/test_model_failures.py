"""A failure is never an empty answer: a model server that is down, hung, answering HTTP 500 or garbled
bodies makes a question fail in every mode (global, DRIFT and lazy as much as basic), named at every
door; `no_results` is left to an index that holds nothing relevant.

Real servers on 127.0.0.1: the fault proxy answering every request with the fault, a hung one holding
each request unanswered, and a port nothing listens on. The clocks are set small (a first token within
0.5 s) so that a hang trips at once; no assertion is on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from deploy.local_cluster import free_port
from pipeline.engine.llm import LLMEngine
from pipeline.eval.questions import EvalQuestion
from pipeline.eval.run import evaluate_async
from pipeline.io.store import NamespaceStore
from pipeline.llm import LLMClient
from pipeline.llm.errors import (
    LLMCallError,
    LLMError,
    LLMTimeoutError,
    LLMUnreachableError,
    LLMUnresponsiveError,
)
from pipeline.llm.retry import Backoff
from pipeline.query import registry
from pipeline.service.queries import QueryService
from tests.conftest import REPO_ROOT
from tests.support.fault_proxy import FaultProxy
from tests.support.service_data import (
    BODIES,
    KEY_A,
    ServiceData,
    auth,
    offline_settings,
    serving,
)

MODES = ["basic", "local", "drift", "global", "lazy", "auto"]
FAULTS = ["down", "hang", "500", "garble"]
# What each fault is raised as, after the client's retries.
RAISED: dict[str, type[LLMError]] = {
    "down": LLMUnreachableError,
    "hang": LLMUnresponsiveError,
    "500": LLMCallError,
    "garble": LLMCallError,
}
HTTP = {"down": (502, "llm_unreachable"), "hang": (504, "llm_timeout"), "500": (502, "llm_failed"),
        "garble": (502, "llm_failed")}  # fmt: skip


@contextlib.contextmanager
def model_server(fault: str) -> Iterator[tuple[str, FaultProxy | None]]:
    """(base URL, proxy) of a model server that fails every request with `fault`; "down": nothing
    listens there."""
    if fault == "down":
        yield f"http://127.0.0.1:{free_port()}/v1", None
        return
    with FaultProxy(None, hang_s=600) as proxy:
        proxy.fault_when(lambda _request: True, fault)
        yield proxy.base_url, proxy


def engine_for(base_url: str, **overrides: Any) -> LLMEngine:
    options: dict[str, Any] = {
        "model": "scripted",
        "api_key": "test-key",
        "base_url": base_url,
        "timeout_s": 30,
        "first_token_timeout_s": 0.5,
        "idle_timeout_s": 0.5,
        "max_retries": 1,
        "backoff": Backoff(initial_s=0.01, max_s=0.05),
    }
    return LLMEngine(LLMClient(**{**options, **overrides}))


def ask(data: ServiceData, mode: str, engine: LLMEngine) -> Any:
    body = BODIES[mode]
    store = NamespaceStore(data.storage_root, "acme").pinned()
    given = {k: v for k, v in body.items() if k not in ("namespace", "question")}
    return registry.run_sync(
        mode,
        body["question"],
        given,
        settings=offline_settings(data),
        store=store,
        engine=engine,
        embedder=data.embedder,
    )


# ---- the LLM layer --------------------------------------------------------------------------------------
def test_an_unreachable_server_is_named_and_not_asked_again_by_the_same_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = engine_for(f"http://127.0.0.1:{free_port()}/v1", max_retries=2)
    client = engine.client
    messages = [{"role": "user", "content": "Hello?"}]
    with caplog.at_level(logging.WARNING, logger="pipeline.llm"):
        with pytest.raises(LLMUnreachableError, match="could not be reached in 3 attempt") as first:
            client.run_sync(client.complete_text(messages, task="a", prompt_version="v1"))
        sent = client.usage.requests

        async def many() -> list[BaseException | str]:
            calls = [client.complete_text(messages, task=f"b{i}", prompt_version="v1") for i in range(30)]
            return await asyncio.gather(*calls, return_exceptions=True)

        later = client.run_sync(many())
    assert first.value.attempts == 3 and not first.value.repeated
    assert all(isinstance(e, LLMUnreachableError) and e.repeated for e in later)
    assert "could not be reached" in str(later[0]) and "not asked again" in str(later[0])
    assert client.usage.requests == sent == 3  # nothing was sent for the 30 later calls
    failed = [r for r in caplog.records if r.name == "pipeline.llm.client"]
    assert len(failed) == 1  # said once, not 31 times


def test_a_hung_server_is_named_after_one_retry_of_its_first_token_timeout() -> None:
    with model_server("hang") as (url, proxy):
        assert proxy is not None
        client = engine_for(url, max_retries=4).client  # the default: one retry of a timeout
        messages = [{"role": "user", "content": "Hello?"}]
        with pytest.raises(LLMUnresponsiveError, match="sent nothing back, 2 time") as hung:
            client.run_sync(client.complete_text(messages, task="a", prompt_version="v1"))
        assert "PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S" in str(hung.value)
        with pytest.raises(LLMUnresponsiveError, match="not asked again"):
            client.run_sync(client.complete_text(messages, task="b", prompt_version="v1"))
        assert proxy.received == 2


# ---- every mode ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mode", MODES)
def test_a_failing_model_fails_the_question_in_every_mode(
    service_data: ServiceData, mode: str, fault: str
) -> None:
    with model_server(fault) as (url, proxy):
        engine = engine_for(url)
        with pytest.raises(RAISED[fault]) as failed:
            ask(service_data, mode, engine)
        if fault == "500":
            assert failed.value.status == 500  # type: ignore[attr-defined]
        if fault == "hang":
            assert proxy is not None
            received = proxy.received
            # a second question of the same engine sends nothing: the server was found hung
            with pytest.raises(LLMTimeoutError):
                ask(service_data, mode, engine)
            assert proxy.received == received
    assert not isinstance(failed.value, LLMUnreachableError) or fault == "down"


@pytest.mark.parametrize("mode", ["lazy", "local", "basic", "auto"])
def test_a_mode_of_many_calls_stops_at_the_first_call_that_finds_the_server_hung(
    service_data: ServiceData, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Lazy's first call (its expansion) meets the hang alone: its two attempts are all the server gets,
    however many ratings the question would have made, and the log says it once."""
    with model_server("hang") as (url, proxy), caplog.at_level(logging.WARNING, logger="pipeline.llm"):
        assert proxy is not None
        with pytest.raises(LLMUnresponsiveError):
            ask(service_data, mode, engine_for(url))
        assert proxy.received == 2
    assert len([r for r in caplog.records if r.name == "pipeline.llm.client"]) == 1


# ---- the doors -------------------------------------------------------------------------------------------
def cli(data: ServiceData, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(data.storage_root),
        "PIPELINE_CACHE_DIR": str(data.storage_root.parent / "cli-cache"),
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": url,
        "PIPELINE_LLM_MODEL": "scripted",
        "PIPELINE_LLM_MAX_RETRIES": "1",
        "PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S": "0.5",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "assets", "query", *args], capture_output=True, text=True, env=environ,
        cwd=REPO_ROOT, timeout=600,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "fault"), [("global", "down"), ("drift", "500"), ("lazy", "hang"), ("basic", "garble")]
)
def test_the_cli_exits_1_with_one_line_naming_the_failure(service_data: ServiceData, mode: str, fault: str) -> None:  # fmt: skip
    with model_server(fault) as (url, _):
        done = cli(service_data, url, mode, "--namespace", "acme", BODIES[mode]["question"])
    assert done.returncode == 1, done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: the model failed: "), done.stderr
    assert "Traceback" not in done.stderr and "No relevant" not in done.stdout
    said = {
        "down": "could not be reached",
        "500": "HTTP 500",
        "hang": "sent nothing back",
        "garble": "Garbled",
    }
    assert said[fault] in done.stderr


def test_the_cli_streaming_json_ends_with_the_error_event(service_data: ServiceData) -> None:
    with model_server("down") as (url, _):
        done = cli(
            service_data,
            url,
            "drift",
            "--namespace",
            "acme",
            "--stream",
            "--json",
            BODIES["drift"]["question"],
        )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    last = json.loads(done.stdout.splitlines()[-1])
    assert last["event"] == "error" and last["data"]["code"] == "llm_unreachable"


def service_with(data: ServiceData, url: str) -> QueryService:
    return QueryService(
        offline_settings(data), embedder=data.embedder, engine_factory=lambda: engine_for(url)
    )


@pytest.mark.parametrize("fault", FAULTS)
def test_http_answers_502_or_504_with_a_named_code_in_global_drift_and_lazy(service_data: ServiceData, fault: str) -> None:  # fmt: skip
    with (
        model_server(fault) as (url, _),
        serving(service_with(service_data, url)) as base,
        httpx.Client(base_url=base, timeout=120) as http,
    ):
        for mode in ("global", "drift", "lazy", "basic"):
            r = http.post(f"/v1/query/{mode}", json=BODIES[mode], headers=auth(KEY_A))
            error = r.json()["error"]
            assert (r.status_code, error["code"]) == HTTP[fault], (mode, r.text)
            assert "127.0.0.1" not in r.text  # the model server's address stays in the log
        body = {**BODIES["global"], "stream": True}
        events = http.post("/v1/query/global", json=body, headers=auth(KEY_A)).text
    kinds = [line[len("event: ") :] for line in events.splitlines() if line.startswith("event: ")]
    assert kinds[-1] == "error" and "done" not in kinds
    last = json.loads(events.strip().splitlines()[-1][len("data: ") :])
    assert (last["status"], last["code"]) == HTTP[fault]


def test_the_chat_door_and_mcp_answer_the_failure_as_an_error(service_data: ServiceData) -> None:
    with model_server("500") as (url, _), serving(service_with(service_data, url)) as base:
        chat = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY_A, max_retries=0, timeout=120)
        question = [{"role": "user", "content": BODIES["drift"]["question"]}]
        with pytest.raises(openai.APIStatusError) as refused:
            chat.chat.completions.create(model="acme/drift", messages=question)  # type: ignore[arg-type]
        assert refused.value.status_code == 502 and refused.value.body["code"] == "llm_failed"
        stream = chat.chat.completions.create(model="acme/global", messages=question, stream=True)  # type: ignore[arg-type]
        with pytest.raises(openai.APIError) as streamed:
            list(stream)
        assert "model server failed" in str(streamed.value)

        async def mcp() -> Any:
            http = create_mcp_http_client(headers=auth(KEY_A))
            async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                return await client.call_tool("lazy_search", BODIES["lazy"])

        result = asyncio.run(asyncio.wait_for(mcp(), timeout=600))  # guards against a hang only
    assert result.is_error and json.loads(result.content[0].text)["error"]["code"] == "llm_failed"


def test_eval_counts_a_failed_model_as_failed_questions(service_data: ServiceData) -> None:
    questions = [EvalQuestion(id="q1", question=BODIES["local"]["question"], answers=("clerk",))]
    store = NamespaceStore(service_data.storage_root, "acme")
    modes = ["global", "drift", "lazy"]
    with model_server("down") as (url, _):
        engine = engine_for(url)
        run = engine.run_sync(
            evaluate_async(
                store, engine, service_data.embedder, offline_settings(service_data), questions, modes
            )
        )
    assert [r.status for r in run.rows] == ["failed"] * 3
    assert all("LLMUnreachableError" in (r.error or "") for r in run.rows)
    assert [run.summary[m]["overall"]["failures"] for m in modes] == [1, 1, 1]
