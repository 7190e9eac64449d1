"""Streamed answers (`"stream": true` or `Accept: text/event-stream`) over real HTTP on 127.0.0.1: every
mode's stream ends with one `done` whose result, citations and answer are the unstreamed answer's, its
`delta` texts join to the answer, a refusal before the first event is the usual JSON error, and a client
that leaves mid-stream cancels the query's work and gives its key's slot back.

The namespaces are the service tests' (`tests.support.service_data`: two tenants on the hand-built Christmas Carol index); the disconnect
test adds a mode of its own whose search waits at one step for the query's cancel signal, so that what
it asserts (the cancel arrived, the slot came back) is an event, not a time.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from pipeline.core import schema
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.query.common.mode import Mode
from pipeline.query.common.scope import QueryScope
from pipeline.query.requests import QueryOptions
from pipeline.service.limits import KeyLimiter
from pipeline.service.models import bodies
from pipeline.service.queries import QueryService
from tests.support.event_stream import parse
from tests.support.service_data import BODIES, KEY_A, ServiceData, auth, offline_settings, serving

GUARD_S = 60.0  # a guard against a hang only: every wait below ends on an event
TIMING = frozenset({"duration_s", "timings_ms"})


# conftest's `offline_service` with room for every citation and context row, so that the stream's bounds
# show only where a test sets them.
OFFLINE_SERVICE_SETTINGS = {"service_max_evidence_items": 50}


def untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_stream_ends_with_done_whose_answer_and_citations_are_the_unstreamed_ones(
    service_client: httpx.Client,
    kind: str,
) -> None:
    body = BODIES[kind]
    plain = service_client.post(f"/v1/query/{kind}", json=body, headers=auth(KEY_A))
    assert plain.status_code == 200, plain.text
    streamed = service_client.post(f"/v1/query/{kind}", json={**body, "stream": True}, headers=auth(KEY_A))
    assert streamed.status_code == 200, streamed.text
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = parse(streamed.text)
    kinds = [k for k, _ in events]
    assert set(kinds) <= set(ev.KINDS)
    assert kinds[-1] == ev.DONE and kinds.count(ev.DONE) == 1 and ev.ERROR not in kinds
    assert kinds[0] == ev.ROUTE
    route = events[0][1]
    assert route["mode"] == kind and route["route"] == plain.json()["result"].get("route", kind)
    done = events[-1][1]
    result = plain.json()["result"]
    assert untimed(done["result"]) == untimed(result)
    assert done["status"] == plain.json()["status"] and done["truncated"] == plain.json()["truncated"]
    # The citations: each sent once as an event, the same list in `done`, both the result's own.
    cited = [d for k, d in events if k == ev.CITATION]
    assert cited == done["citations"] == ev.citations_of(result)
    if kind in ("local", "basic", "lazy", "drift", "global", "auto"):
        assert cited, "an answer with citations streams them"
    deltas = "".join(d["text"] for k, d in events if k == ev.DELTA)
    assert deltas == (result.get("answer") or "")
    if result.get("answer"):
        assert kinds.count(ev.DELTA) > 1, "the answer arrives in pieces"


def test_accept_event_stream_asks_for_the_same_stream(service_client: httpx.Client) -> None:
    headers = {**auth(KEY_A), "Accept": "text/event-stream"}
    response = service_client.post("/v1/query/basic", json=BODIES["basic"], headers=headers)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert parse(response.text)[-1][0] == ev.DONE
    unasked = service_client.post("/v1/query/basic", json=BODIES["basic"], headers=auth(KEY_A))
    assert unasked.headers["content-type"].startswith("application/json") and "result" in unasked.json()


@pytest.mark.parametrize(
    ("namespace", "status", "code"),
    [("acme-empty", 409, "index_not_ready"), ("globex", 403, "forbidden")],
)
def test_a_refusal_before_the_first_event_is_the_json_error(
    service_client: httpx.Client,
    namespace: str,
    status: int,
    code: str,
) -> None:
    body = {**BODIES["local"], "namespace": namespace, "stream": True}
    response = service_client.post("/v1/query/local", json=body, headers=auth(KEY_A))
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == code


def test_the_answer_is_bounded_in_the_stream_as_in_the_result(service_data: ServiceData) -> None:
    svc = QueryService(
        offline_settings(service_data, service_max_answer_chars=100), embedder=service_data.embedder
    )
    request = bodies()["local"](**BODIES["local"])
    principal = svc.keys.authenticate(KEY_A)

    async def both() -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
        return await svc.run(principal, request), [e async for e in svc.stream(principal, request)]

    plain, events = asyncio.run(both())
    assert plain["truncated"] and plain["result"]["answer"].endswith("…")
    assert "".join(d["text"] for k, d in events if k == ev.DELTA) == plain["result"]["answer"]


def test_openapi_documents_the_stream_field_and_the_event_stream(service_client: httpx.Client) -> None:
    spec = service_client.get("/openapi.json").json()
    body = spec["components"]["schemas"]["LocalQuery"]["properties"]["stream"]
    assert (
        body["type"] == "boolean" and body["default"] is False and "Server-Sent Events" in body["description"]
    )
    ok = spec["paths"]["/v1/query/local"]["post"]["responses"]["200"]["content"]
    assert {"application/json", "text/event-stream"} <= set(ok)


# ---- a client that leaves cancels the query ----------------------------------------------------------------
class WaitOptions(QueryOptions):
    """A mode that writes one sentence, then waits at its next step until the query is cancelled."""


@dataclass(frozen=True)
class WaitConfig:
    pass


@dataclass
class Steps:
    """What the waiting mode did: it reached its waiting step; why it stopped; steps after that."""

    reached: threading.Event
    stopped: list[str | None]
    after: list[int]


STEPS = Steps(threading.Event(), [], [])


async def waiting_search(scope: QueryScope, question: str, config: WaitConfig) -> Any:
    scope.emit(ev.DELTA, text="The first step is done. ")
    STEPS.reached.set()
    assert scope.cancel is not None
    scope.cancel.wait(GUARD_S)  # the step: it ends when the query is cancelled
    STEPS.stopped.append(scope.stopped())
    if scope.stopped() is None:  # never cancelled: it would go on, and says so
        STEPS.after.append(1)
    return _Done()


class _Done:
    def to_dict(self) -> dict[str, Any]:
        return {"status": "completed", "answer": "The first step is done. The second step too."}


WAIT = Mode(
    name="wait",
    options=WaitOptions,
    configure=lambda settings, given: WaitConfig(),
    search=waiting_search,
    needs=(("parquet", schema.TEXT_UNITS),),
    uses_model=False,
    lane="quick",
)


class Released(KeyLimiter):
    """The service's limiter, telling waiters each time a slot is given back."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.changed = threading.Condition()

    def release(self, key_id: str) -> None:
        super().release(key_id)
        with self.changed:
            self.changed.notify_all()

    def wait_free(self, key_id: str) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.in_flight(key_id) == 0, timeout=GUARD_S)


@pytest.fixture
def waiting(service_data: ServiceData) -> Iterator[tuple[QueryService, Released]]:
    STEPS.reached.clear()
    STEPS.stopped.clear()
    STEPS.after.clear()
    with registry.registered(WAIT):
        svc = QueryService(offline_settings(service_data), embedder=service_data.embedder)
        svc.limiter = limiter = Released(svc.settings.service_key_concurrency)
        yield svc, limiter


def test_a_client_that_disconnects_cancels_the_query_and_frees_its_slot(
    waiting: tuple[QueryService, Released],
) -> None:
    svc, limiter = waiting
    key_id = svc.keys.authenticate(KEY_A).key_id
    body = {"namespace": "acme", "question": "wait", "stream": True}
    with serving(svc) as url, httpx.Client(base_url=url, timeout=GUARD_S) as http:
        with http.stream("POST", "/v1/query/wait", json=body, headers=auth(KEY_A)) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            assert next(lines) == "event: route"
            assert STEPS.reached.wait(GUARD_S), "the query reached its waiting step"
            assert limiter.in_flight(key_id) == 1  # the query holds its key's slot while it works
        # The response is closed unread: the client is gone.
        assert limiter.wait_free(key_id), "the key's slot came back"
    assert STEPS.stopped == ["cancelled"] and STEPS.after == []


def test_closing_the_stream_early_cancels_the_query(waiting: tuple[QueryService, Released]) -> None:
    svc, limiter = waiting
    principal = svc.keys.authenticate(KEY_A)
    request = bodies()["wait"](namespace="acme", question="wait")

    async def first_then_close() -> list[tuple[str, dict[str, Any]]]:
        stream = svc.stream(principal, request)
        got = [await anext(stream), await anext(stream)]
        await stream.aclose()
        return got

    got = asyncio.run(first_then_close())
    assert [k for k, _ in got] == [ev.ROUTE, ev.DELTA]
    assert limiter.wait_free(principal.key_id)
    assert STEPS.stopped == ["cancelled"] and STEPS.after == []


@pytest.mark.parametrize("kind", ["local", "basic", "lazy", "drift", "global", "auto"])
def test_the_context_event_lists_what_the_answer_read_with_scores_before_the_answer(
    service_client: httpx.Client,
    kind: str,
) -> None:
    body = {**BODIES[kind], "stream": True}
    events = parse(service_client.post(f"/v1/query/{kind}", json=body, headers=auth(KEY_A)).text)
    kinds = [k for k, _ in events]
    assert ev.CONTEXT in kinds
    assert ev.DELTA not in kinds[: kinds.index(ev.CONTEXT)], "the sources come before the answer"
    sources = [s for k, d in events if k == ev.CONTEXT for s in d["sources"]]
    assert all({"section", "rank", "score"} <= set(s) for s in sources)
    if events[0][1]["route"] == "global":  # auto sends this question there
        assert {s["section"] for s in sources} == {"communities"}
        assert all(s["title"] and isinstance(s["score"], float) for s in sources)
        return
    passages = [s for s in sources if s["section"] == "sources"]
    assert passages and all(s["document_title"] == "carol.txt" and s["text"] for s in passages)
    scored = [isinstance(s["score"], float) for s in passages]
    assert any(scored) and (all(scored) or kind == "lazy"), "lazy's untested fills have none"
    if kind == "local":  # the graph's rows too, each with its own score where local ranks it
        assert {"reports", "entities", "relationships"} <= {s["section"] for s in sources}
        assert any(isinstance(s["score"], float) for s in sources if s["section"] == "entities")


def test_a_context_is_bounded_as_the_result_is(service_data: ServiceData) -> None:
    svc = QueryService(
        offline_settings(service_data, service_max_evidence_items=2, service_max_text_chars=100),
        embedder=service_data.embedder,
    )
    principal = svc.keys.authenticate(KEY_A)
    request = bodies()["local"](**BODIES["local"])

    async def events() -> list[tuple[str, dict[str, Any]]]:
        return [e async for e in svc.stream(principal, request)]

    contexts = [d["sources"] for k, d in asyncio.run(events()) if k == ev.CONTEXT]
    assert contexts and all(len(sources) <= 2 for sources in contexts)
    assert all(len(s["text"]) <= 101 for sources in contexts for s in sources)


def test_a_stream_past_its_deadline_ends_with_one_error_event(waiting: tuple[QueryService, Released]) -> None:
    svc, limiter = waiting
    principal = svc.keys.authenticate(KEY_A)
    request = bodies()["wait"](namespace="acme", question="wait", timeout_s=0.5)

    async def heard() -> list[tuple[str, dict[str, Any]]]:
        return [e async for e in svc.stream(principal, request)]

    got = asyncio.run(heard())
    assert [k for k, _ in got] == [ev.ROUTE, ev.DELTA, ev.ERROR]
    error = got[-1][1]
    assert error["status"] == 504 and error["code"] == "deadline_exceeded"
    assert limiter.wait_free(principal.key_id)
    assert STEPS.stopped == ["cancelled"]


# ---- a query whose first event comes in its grace past the deadline ----------------------------------------
PAST = threading.Event()  # the stream stopped reading at the deadline and waits for the worker's grace


async def late_search(scope: QueryScope, question: str, config: WaitConfig) -> Any:
    # Its first events only once the stream has given up on the deadline: they arrive in the grace drain
    assert PAST.wait(GUARD_S)
    scope.emit(ev.ROUTE, mode="late", route="late", reason="the deadline passed")
    scope.emit(ev.DELTA, text="Too late. ")
    return _Late()


class _Late:
    def to_dict(self) -> dict[str, Any]:  # what a mode that noticed the deadline at its step returns
        return {"status": "cancelled", "reason": "deadline passed", "answer": "Too late. "}


# `wait` but for its search, and routes=True: the door sends no route of its own, so nothing reaches the
# stream before the deadline
LATE = dataclasses.replace(WAIT, name="late", search=late_search, routes=True)


def test_a_stream_whose_first_event_comes_past_its_deadline_ends_with_one_error_event(
    service_data: ServiceData, monkeypatch: pytest.MonkeyPatch
) -> None:
    PAST.clear()
    svc = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    start = svc.start

    async def noticed(*args: Any) -> Any:
        query = await start(*args)
        wait = query.wait

        async def past() -> None:  # the stream's main loop is over: it waits for the worker's grace
            PAST.set()
            await wait()

        query.wait = past
        return query

    monkeypatch.setattr(svc, "start", noticed)
    principal = svc.keys.authenticate(KEY_A)

    async def heard(request: Any) -> list[tuple[str, dict[str, Any]]]:
        return [e async for e in svc.stream(principal, request)]

    with registry.registered(LATE):
        got = asyncio.run(heard(bodies()["late"](namespace="acme", question="late", timeout_s=0.5)))
    assert [k for k, _ in got] == [ev.ROUTE, ev.DELTA, ev.ERROR]
    error = got[-1][1]
    assert error["status"] == 504 and error["code"] == "deadline_exceeded"


@pytest.mark.parametrize("kind", ["basic", "local", "global"])
def test_an_offline_answer_is_sent_line_by_line_as_its_writer_chooses_it(
    service_client: httpx.Client,
    kind: str,
) -> None:
    # The writers' own lines (a theme, a cited sentence), not the fallback's sentence split after the
    # search: each delta is one whole line of the final answer.
    streamed = service_client.post(
        f"/v1/query/{kind}", json={**BODIES[kind], "stream": True}, headers=auth(KEY_A)
    )
    events = parse(streamed.text)
    answer = events[-1][1]["result"]["answer"]
    assert [d["text"] for k, d in events if k == ev.DELTA] == answer.splitlines(keepends=True)
