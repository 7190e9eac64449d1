"""Streams that survive retries: a model server that sends the answer's first token (`{`) and stalls, then
answers the retry, never leaves that partial text in a stream. The retry writes otherwise, so the first
attempt's text is withdrawn (`retract`, `pipeline.query.common.events`); at every streaming door the
deltas, retracts applied, join to the answer `done` carries: the HTTP API's server-sent events (and the
web app reading them), the CLI's `--stream` (text and JSON) and the OpenAI-compatible chat door, streamed.

Also: global streams its reduce answer in token deltas with a model; `--stream --json` sends the
citation events its help promises; the chat door reports the tokens of the calls the answer made.

The stall is an event (the Nth request of a kind, `FaultProxy.fault_when`); the idle clock is set small so
that it trips at once. No assertion is on time.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import httpx
import openai
from selenium.webdriver.common.by import By

from assets.cli.query_stream import Printer, erase
from pipeline import prompts
from pipeline.caches.sqlite_llm import LLMCache
from pipeline.engine.llm import LLMEngine
from pipeline.llm import LLMClient
from pipeline.llm.retry import Backoff
from pipeline.query.common import events as ev
from pipeline.service.queries import QueryService
from tests.conftest import REPO_ROOT
from tests.support.event_stream import parse
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.scripted_local_model import ScriptedModel
from tests.support.service_data import BODIES, KEY_A, ServiceData, auth, offline_settings, serving
from tests.support.web_page import ask, signed_in

QUESTION = BODIES["local"]["question"]


def asks(system: str) -> Callable[[ProxyRequest], bool]:
    def match(request: ProxyRequest) -> bool:
        body = request.body if isinstance(request.body, dict) else {}
        return str((body.get("messages") or [{}])[0].get("content", "")).startswith(system)

    return match


def stall_first(proxy: FaultProxy, system: str) -> list[int]:
    """The first request of the task whose system prompt is `system` stalls after one token (`{`); the
    numbers of the stalled requests are listed in what this returns."""
    stalled: list[int] = []
    of_task = asks(system)

    def first(request: ProxyRequest) -> bool:
        if of_task(request) and not stalled:
            stalled.append(request.number)
            return True
        return False

    proxy.fault_when(first, "stall")
    return stalled


def engine_for(base_url: str, cache: Path) -> LLMEngine:
    client = LLMClient(
        model="scripted",
        api_key="test-key",
        base_url=base_url,
        timeout_s=120,
        first_token_timeout_s=120,
        idle_timeout_s=0.3,  # the stall trips at once; the proxy sends a whole reply in one write
        max_retries=1,
        cache=LLMCache(cache),
        backoff=Backoff(initial_s=0.01, max_s=0.05),
    )
    return LLMEngine(client)


@contextlib.contextmanager
def stalled_service(
    data: ServiceData, tmp_path: Path, model: Any, system: str
) -> Iterator[tuple[str, FaultProxy, list[int]]]:
    with FaultProxy(None, responder=model) as proxy:
        stalled = stall_first(proxy, system)
        cache = tmp_path / "llm.sqlite"
        service = QueryService(
            offline_settings(data), embedder=data.embedder, engine_factory=lambda: engine_for(proxy.base_url, cache)
        )  # fmt: skip
        with serving(service) as url:
            yield url, proxy, stalled


def joined_to_done(events: list[tuple[str, dict[str, Any]]]) -> str:
    """The streamed text, after checking it is done's answer."""
    assert events[-1][0] == ev.DONE, events[-1]
    text = ""
    for kind, data in events:
        text = ev.applied(text, kind, data)
    assert text == events[-1][1]["result"]["answer"]
    return text


# ---- HTTP server-sent events -----------------------------------------------------------------------------
def test_sse_deltas_join_to_the_answer_after_a_stalled_answer_is_retried(service_data: ServiceData, tmp_path: Path) -> None:  # fmt: skip
    model = ScriptedModel()
    with stalled_service(service_data, tmp_path, model, prompts.LOCAL_ANSWER.system) as (url, proxy, stalled):
        body = {**BODIES["local"], "stream": True}
        with httpx.Client(base_url=url, timeout=120) as http:
            events = parse(http.post("/v1/query/local", json=body, headers=auth(KEY_A)).text)
        assert stalled and proxy.stalls_closed == 1
    kinds = [k for k, _ in events]
    # the stalled attempt's "{" went out, was withdrawn, and the retry's answer followed
    assert events[kinds.index(ev.DELTA)][1] == {"text": "{"}
    assert (ev.RETRACT, {"chars": 1}) in events and kinds.index(ev.RETRACT) > kinds.index(ev.DELTA)
    text = joined_to_done(events)
    assert text.startswith("Bob Cratchit") and len(model.requests["answer"]) == 1


class GlobalModel:
    """Rates every report 8, maps each batch to one point, reduces to a few sentences citing them."""

    ANSWER = (
        "Scrooge's business world is the counting-house [Communities: {c}]. Its clerk is poorly paid, and "
        "the partner who founded it is long dead [Communities: {c}]."
    )

    def __call__(self, body: dict[str, Any]) -> str:
        system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system.startswith(prompts.GLOBAL_RATE.system):
            ids = [int(i) for i in re.findall(r"^(\d+): ", user, re.MULTILINE)]
            return json.dumps({"ratings": [{"community": i, "score": 8} for i in ids]})
        if system.startswith(prompts.GLOBAL_REDUCE.system):
            cited = re.findall(r"Community IDs: (\d+)", user)
            return self.ANSWER.format(c=cited[0] if cited else 0)
        point = {
            "description": "Scrooge keeps a counting-house with a clerk.",
            "score": 70,
            "communities": [],
        }
        return json.dumps({"points": [point]})


def test_global_streams_its_reduce_answer_in_token_deltas_that_survive_a_retry(
    service_data: ServiceData, tmp_path: Path
) -> None:
    with stalled_service(service_data, tmp_path, GlobalModel(), prompts.GLOBAL_REDUCE.system) as (
        url,
        _,
        stalled,
    ):
        body = {**BODIES["global"], "stream": True}
        with httpx.Client(base_url=url, timeout=120) as http:
            events = parse(http.post("/v1/query/global", json=body, headers=auth(KEY_A)).text)
    assert stalled
    text = joined_to_done(events)
    retract = [k for k, _ in events].index(ev.RETRACT)
    # the answer came in the model's chunks (tests/support/sse.py: 12 characters each), not whole
    assert len([k for k, _ in events[retract:] if k == ev.DELTA]) > 3
    assert text.startswith("Scrooge's business world") and events[-1][1]["status"] == "completed"


# ---- the CLI -----------------------------------------------------------------------------------------------
def cli(data: ServiceData, url: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PIPELINE_STORAGE_ROOT": str(data.storage_root),
        "PIPELINE_CACHE_DIR": str(cache),
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": url,
        "PIPELINE_LLM_MODEL": "scripted",
        "PIPELINE_LLM_IDLE_TIMEOUT_S": "0.3",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "assets", "query", "local", "--namespace", "acme", *args, QUESTION],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=600,
    )  # fmt: skip


def test_cli_stream_prints_the_answer_not_the_stalled_attempts_text(service_data: ServiceData, tmp_path: Path) -> None:  # fmt: skip
    with FaultProxy(None, responder=ScriptedModel()) as proxy:
        stalled = stall_first(proxy, prompts.LOCAL_ANSWER.system)
        streamed = cli(service_data, proxy.base_url, tmp_path, "--stream")
        as_json = cli(
            service_data, proxy.base_url, tmp_path / "json", "--stream", "--json"
        )  # its own cache: stalls too
        plain = cli(
            service_data,
            proxy.base_url,
            tmp_path,
        )  # the answer is cached now: the same text
        assert len(stalled) == 1 and proxy.stalls_closed == 1
    assert streamed.returncode == plain.returncode == 0, streamed.stderr[-2000:]
    assert streamed.stdout == plain.stdout and streamed.stdout.startswith("Bob Cratchit")
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    events = [(line["event"], line["data"]) for line in lines]
    result = events[-1][1]["result"]
    assert events[-1][0] == ev.DONE and joined_to_done(events) == result["answer"]
    # the citation events its help promises, numbered as the result lists its citations
    assert [d for k, d in events if k == ev.CITATION] == ev.citations_of(result) != []


def test_cli_stream_on_a_terminal_erases_what_is_withdrawn() -> None:
    out = io.StringIO()
    printer = Printer(as_json=False, live=True)
    with redirect_stdout(out):
        for kind, data in [
            (ev.DELTA, {"text": "{"}),
            (ev.RETRACT, {"chars": 1}),
            (ev.DELTA, {"text": "Bob."}),
        ]:
            printer(kind, data)
    assert out.getvalue() == "{" + "\r\x1b[J" + "Bob."
    assert printer.text == printer.shown == "Bob."
    # back over wrapped and broken lines: 3 rows up from the end of "ab\ncdefgh" (width 2) to after "a"
    assert erase("ab\ncdefgh", 1, 2) == "\x1b[3A\r\x1b[1C\x1b[J"

    class Result:
        def to_dict(self) -> dict[str, Any]:
            return {"answer": "Bob is a clerk."}

    def render(result: Any, args: Any, scope: Any) -> int:
        print("Bob is a clerk.\n\n[status: completed]")
        return 0

    out = io.StringIO()
    with redirect_stdout(out):  # the answer printed as it came, then the rest of what the mode prints
        printer = Printer(as_json=False, live=True)
        printer(ev.DELTA, {"text": "Bob is a clerk."})
        assert printer.finish(render, Result(), None, None) == 0
    assert out.getvalue() == "Bob is a clerk.\n\n[status: completed]\n"


# ---- the chat door -----------------------------------------------------------------------------------------
def test_chat_door_stream_gives_the_answer_with_sources_and_real_usage_after_a_retry(
    service_data: ServiceData, tmp_path: Path
) -> None:
    with stalled_service(service_data, tmp_path, ScriptedModel(), prompts.LOCAL_ANSWER.system) as (
        url,
        proxy,
        stalled,
    ):
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key=KEY_A, max_retries=0, timeout=120)
        messages = [{"role": "user", "content": QUESTION}]
        chunks = list(
            chat.chat.completions.create(
                model="acme/local",
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},  # type: ignore[arg-type]
            )
        )
        assert stalled and proxy.stalls_closed == 1
        whole = chat.chat.completions.create(model="acme/local", messages=messages)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content and text.startswith("Bob Cratchit")
    [last] = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert (last.model_extra or {}).get("sources")
    usage = chunks[-1].usage
    # the three calls the answer made (parse, selection, answer), as the model counted each (10 + 5);
    # the stalled attempt was never finished, so the server counted nothing for it
    assert usage is not None and (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (
        30,
        15,
        45,
    )


# ---- the web app -----------------------------------------------------------------------------------------
def test_the_web_app_takes_back_the_withdrawn_text(
    browser, service_data: ServiceData, tmp_path: Path
) -> None:  # noqa: ANN001
    with stalled_service(service_data, tmp_path, ScriptedModel(), prompts.LOCAL_ANSWER.system) as (
        url,
        _,
        stalled,
    ):
        signed_in(browser, url)
        ask(browser, "acme", "local", QUESTION)
        assert stalled
    answer = browser.find_element(By.ID, "answer")
    lengths = [int(n) for n in answer.get_attribute("data-lengths").split(",")]
    # shown after each delta and retract: the "{" (1), taken back (0), then the answer growing
    assert lengths[:2] == [1, 0] and lengths[2:] == sorted(lengths[2:]) and lengths[-1] > 12
    assert answer.text.startswith("Bob Cratchit")
