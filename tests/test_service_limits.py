"""Deadlines and the per-key limit with a real LLM path (through the fault proxy), and fuzzed request bodies.

The LLM-backed service is configured like a deployment would be (`llm_provider=openai`, base URL =
the fault proxy), so the engine, the client and its connection handling are the real ones.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.service import queries as queries_module
from pipeline.service.queries import QueryService
from tests.support.fault_proxy import FaultProxy
from tests.support.scripted_global_model import scripted_model
from tests.support.service_data import (
    BODIES,
    KEY_A,
    KEY_B,
    auth,
    offline_settings,
    serving,
)

LLM_KEY_ENV = "GRAPHRAG_TEST_SERVICE_LLM_KEY"


@pytest.fixture(scope="module")
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy(None, hang_s=10, responder=scripted_model) as p:
        yield p


def llm_settings(service_data, proxy: FaultProxy):  # noqa: ANN001, ANN201
    """The offline service's settings with the model behind `proxy` (its key from LLM_KEY_ENV)."""
    return offline_settings(
        service_data,
        llm_provider="openai",
        llm_base_url=proxy.base_url,
        llm_api_key_env=LLM_KEY_ENV,
        llm_model="m",
    )


@pytest.fixture(scope="module")
def llm_service(service_data, proxy: FaultProxy) -> Iterator[QueryService]:  # noqa: ANN001
    os.environ[LLM_KEY_ENV] = "sk-test-llm-key"
    settings = llm_settings(service_data, proxy)
    svc = QueryService(settings, embedder=service_data.embedder)
    svc.warm_up()
    yield svc
    os.environ.pop(LLM_KEY_ENV, None)


@pytest.fixture(scope="module")
def llm_url(llm_service: QueryService) -> Iterator[str]:
    with serving(llm_service) as url:
        yield url


# Generous: it only bounds how long a broken service could make a test hang, never what passes.
WAIT_S = 60.0


def wait_for(predicate, timeout: float = WAIT_S) -> bool:  # noqa: ANN001
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def open_connections_to(port: int) -> list:
    return [
        c
        for c in psutil.Process().net_connections("tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    ]


def test_a_hanging_llm_call_is_504_within_the_deadline_and_nothing_keeps_running(
    llm_url: str, llm_service: QueryService, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker's own deadline cuts the call; the service waits GRACE_S past it for the worker to hand
    # back what it has done. Made long here so that a slow machine cannot turn "cancelled, partial
    # result" into "still inside a stage": what is tested is what the worker hands back.
    monkeypatch.setattr(queries_module, "GRACE_S", WAIT_S)
    proxy.reset_counts()
    hold = proxy.hold()  # the LLM never answers while the query runs
    try:
        body = {"namespace": "acme", "question": "What happened at the counting-house?", "timeout_s": 1.5}
        r = httpx.post(f"{llm_url}/v1/query/global", json=body, headers=auth(KEY_A), timeout=WAIT_S * 2)
        assert not hold.released  # the answer came while the LLM call was still unanswered
        assert r.status_code == 504, r.text
        error = r.json()["error"]
        assert error["code"] == "deadline_exceeded"
        assert error["detail"]["partial"]["status"] == "cancelled"  # what was done: no map batch finished
        assert "cancelled after 0 of" in error["detail"]["reason"]
        assert proxy.received <= 1  # the one map request, if it went out before the deadline
        # The worker has stopped and its connection to the LLM server is closed.
        assert wait_for(lambda: llm_service.limiter.in_flight() == 0)
        assert wait_for(lambda: open_connections_to(urlsplit(proxy.base_url).port) == [])
    finally:
        hold.release()
    received = proxy.received
    proxy.wait_idle(WAIT_S)  # the held request, released, is answered to nobody
    assert proxy.received == received  # and nothing asked again


def test_the_per_key_limit_answers_429_and_frees_its_slots(
    llm_url: str, llm_service: QueryService, proxy: FaultProxy
) -> None:
    proxy.reset_counts()
    hold = proxy.hold()  # the two queries hold their slots for as long as the LLM does not answer
    answers: list[httpx.Response] = []

    def ask(question: str) -> None:
        body = {"namespace": "acme", "question": question, "timeout_s": WAIT_S}
        answers.append(
            httpx.post(f"{llm_url}/v1/query/global", json=body, headers=auth(KEY_A), timeout=WAIT_S * 2)
        )

    threads = [threading.Thread(target=ask, args=(f"What happened on day {i}?",)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        # both queries are in their workers, waiting for the LLM
        assert wait_for(lambda: llm_service.limiter.in_flight() == 2)
        assert wait_for(lambda: len(hold.held) >= 2)
        third = httpx.post(
            f"{llm_url}/v1/query/vector", json=BODIES["vector"], headers=auth(KEY_A), timeout=WAIT_S
        )
        assert third.status_code == 429 and third.headers["retry-after"] == "1"
        assert third.json()["error"]["code"] == "too_many_requests"
        other_key = {**BODIES["vector"], "namespace": "globex"}
        assert (
            httpx.post(f"{llm_url}/v1/query/vector", json=other_key, headers=auth(KEY_B), timeout=WAIT_S)
        ).status_code == 200
        assert not hold.released and llm_service.limiter.in_flight() == 2  # both were busy all along
    finally:
        hold.release()
        for t in threads:
            t.join(timeout=WAIT_S * 2)
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert wait_for(lambda: llm_service.limiter.in_flight() == 0)
    # slots are free again, and the whole LLM path answers when the model does
    body = {"namespace": "acme", "question": "Who kept the counting-house?", "timeout_s": 20}
    r = httpx.post(f"{llm_url}/v1/query/global", json=body, headers=auth(KEY_A), timeout=WAIT_S)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "completed" and "counting-house" in r.json()["result"]["answer"]


def test_the_service_opens_its_llm_cache_once_and_each_query_gets_its_own_engine(
    service_data, proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.runtime as runtime

    opened = []
    real_open = runtime.open_llm_cache
    monkeypatch.setattr(runtime, "open_llm_cache", lambda s: opened.append(real_open(s)) or opened[-1])
    monkeypatch.setenv(LLM_KEY_ENV, "sk-test-llm-key")
    settings = llm_settings(service_data, proxy)
    svc = QueryService(settings, embedder=service_data.embedder)
    try:
        engines = [svc.new_engine() for _ in range(3)]
    finally:
        svc.close()
    assert len(opened) == 1  # one cache for the process, not one per query
    assert all(e.client.cache is opened[0] for e in engines)
    assert len({id(e.client) for e in engines}) == 3  # usage and connections stay the query's own


# ---- fuzzing against the OpenAPI spec ----------------------------------------------------------------
@pytest.fixture(scope="module")
def offline_url(service_data) -> Iterator[str]:  # noqa: ANN001
    svc = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    svc.warm_up()
    with serving(svc) as url:
        yield url


@pytest.fixture(scope="module")
def spec(offline_url: str) -> dict:
    return httpx.get(f"{offline_url}/openapi.json").json()


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=40)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
)
# Values near the fields' rules (valid ones included) so that many bodies get past validation.
plausible = {
    "namespace": st.sampled_from(["acme", "globex", "acme-empty", "nosuch", "Bad NS", ""]),
    "question": st.text(max_size=80),
    "query": st.text(max_size=80),
    "top_k": st.integers(-3, 120),
    "level": st.integers(-1, 4) | st.none(),
    "community_level": st.integers(-1, 4) | st.none(),
    "seed": st.integers(-1, 2**40) | st.none(),
    "random_walk_steps": st.integers(0, 300),
    "restart_prob": st.floats(-0.5, 1.5) | st.just(float("nan")),
    "timeout_s": st.floats(-1, 20) | st.just(float("inf")) | st.none(),
    "method": st.sampled_from(["walk", "ppr", "other"]),
    "filter": st.none()
    | st.dictionaries(
        st.sampled_from(["document_title", "document_id", "n_tokens", "x"]), json_scalars, max_size=3
    ),
}


@st.composite
def request_bodies(draw, properties: list[str]):  # noqa: ANN001, ANN201
    chosen = draw(st.lists(st.sampled_from(properties), unique=True))
    body = {name: draw(plausible.get(name, json_values) | json_values) for name in chosen}
    if draw(st.booleans()):
        body.update({"namespace": "acme", "question": "Who is Scrooge?", "query": "Scrooge"})
        body = {k: v for k, v in body.items() if k in properties}
    return body


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_fuzzed_bodies_never_get_a_500(offline_url: str, spec: dict, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from([p for p in spec["paths"] if p.startswith("/v1/query/")]))
    ref = spec["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    properties = list(spec["components"]["schemas"][ref.rsplit("/", 1)[1]]["properties"])
    body = data.draw(request_bodies(properties) | json_values)
    key = data.draw(st.sampled_from([KEY_A, KEY_A, KEY_B, "nope"]))
    content = json.dumps(body).encode()  # NaN/Infinity included: Python's json writes them
    r = httpx.post(
        f"{offline_url}{path}",
        content=content,
        headers={**auth(key), "Content-Type": "application/json"},
        timeout=60,
    )
    assert r.status_code in (200, 401, 403, 409, 413, 422, 504), (path, body, r.status_code, r.text)
    assert "error" in r.json() or r.status_code == 200


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(raw=st.binary(max_size=300))
def test_fuzzed_raw_bytes_are_422_not_500(offline_url: str, raw: bytes) -> None:
    r = httpx.post(
        f"{offline_url}/v1/query/local",
        content=raw,
        headers={**auth(KEY_A), "Content-Type": "application/json"},
        timeout=60,
    )
    assert r.status_code in (200, 409, 403, 422), (raw, r.status_code, r.text)


class Gate:
    """Wraps a function so that its next call (once armed) waits until the test opens the gate: a step
    that provably outlasts the query's deadline, triggered by an event rather than a clock."""

    def __init__(self) -> None:
        self.armed = False
        self.entered = threading.Event()
        self.go = threading.Event()

    def wrap(self, fn):  # noqa: ANN001, ANN201
        def held(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if self.armed:
                self.armed = False
                self.entered.set()
                self.go.wait(WAIT_S)
            return fn(*args, **kwargs)

        return held


def test_a_vector_query_past_its_deadline_frees_its_slot_one_step_later(
    service_data, monkeypatch: pytest.MonkeyPatch
) -> None:  # noqa: ANN001
    from pipeline.io.store import NamespaceStore
    from pipeline.vector_tool.stores import lancedb as lancedb_store

    steps: list[str] = []
    real_query = lancedb_store.LanceDBStore.query

    def counted(self, *args, **kwargs):  # noqa: ANN001, ANN202 - a spy: the real search, counted
        steps.append("search")
        return real_query(self, *args, **kwargs)

    # The worker's first step (the table check) is held: the deadline is read only after it, so the
    # query provably outlasts its deadline inside a step however slowly the worker got there.
    gate = Gate()
    monkeypatch.setattr(NamespaceStore, "has_lance_table", gate.wrap(NamespaceStore.has_lance_table))
    monkeypatch.setattr(lancedb_store.LanceDBStore, "query", counted)
    service = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    service.warm_up()
    real_embed = service_data.embedder.embed
    monkeypatch.setattr(
        service_data.embedder, "embed", lambda texts: steps.append("embed") or real_embed(texts)
    )
    with serving(service) as url:
        gate.armed = True
        body = {"namespace": "acme", "query": "Marley had been dead seven years.", "timeout_s": 1}
        try:
            r = httpx.post(f"{url}/v1/query/vector", json=body, headers=auth(KEY_A), timeout=WAIT_S)
            assert gate.entered.is_set() and r.status_code == 504, r.text
            assert service.limiter.in_flight() == 1  # the worker is still inside its first step
        finally:
            gate.go.set()  # that step ends now, long past the deadline
        assert wait_for(lambda: service.limiter.in_flight() == 0)  # freed after that one step...
        assert steps == []  # ...without embedding or searching
        # and the key's slot serves the next query at once
        ok = httpx.post(
            f"{url}/v1/query/vector", json={**body, "timeout_s": 60}, headers=auth(KEY_A), timeout=WAIT_S
        )
        assert ok.status_code == 200 and "search" in steps


def test_a_quick_query_is_answered_while_every_graph_worker_is_busy_and_a_queued_one_times_out_unstarted(
    service_data,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []  # every user message the model was sent, in arrival order
    opened: list[str] = []  # the namespace stores the workers opened, one per query that started
    real_open = queries_module.NamespaceStore.from_settings
    monkeypatch.setattr(
        queries_module.NamespaceStore,
        "from_settings",
        lambda settings, namespace: opened.append(namespace) or real_open(settings, namespace),
    )

    def model(request: dict) -> str:
        asked.append(request["messages"][-1]["content"])
        return scripted_model(request)

    os.environ[LLM_KEY_ENV] = "sk-test-llm-key"
    with FaultProxy(None, hang_s=10, responder=model) as proxy:
        settings = offline_settings(
            service_data,
            llm_provider="openai",
            llm_base_url=proxy.base_url,
            llm_api_key_env=LLM_KEY_ENV,
            llm_model="m",
            service_graph_workers=1,
            service_key_concurrency=3,  # the three queries below share acme's key
            service_warm_start=False,  # the stores opened are the queries' alone
        )
        svc = QueryService(settings, embedder=service_data.embedder)
        svc.warm_up()
        answers: dict[str, httpx.Response] = {}

        def ask(name: str, key: str, question: str, timeout_s: float) -> None:
            body = {"namespace": "acme", "question": question, "timeout_s": timeout_s}
            answers[name] = httpx.post(
                f"{url}/v1/query/global", json=body, headers=auth(key), timeout=WAIT_S * 2
            )

        with serving(svc) as url:
            hold = proxy.hold()  # the first global query keeps the one graph worker until released
            first = threading.Thread(target=ask, args=("first", KEY_A, "What did Scrooge own?", WAIT_S))
            queued = threading.Thread(target=ask, args=("queued", KEY_A, "Who was Marley's partner?", 1.0))
            try:
                first.start()
                hold.wait_held(1, timeout=WAIT_S)  # its map request is at the model: the lane is full
                queued.start()
                assert wait_for(lambda: svc.limiter.in_flight() == 2)  # admitted, waiting for the worker
                body = {"namespace": "acme", "query": "Marley had been dead seven years.", "timeout_s": 20}
                quick = httpx.post(f"{url}/v1/query/vector", json=body, headers=auth(KEY_A), timeout=WAIT_S)
                assert quick.status_code == 200, quick.text
                assert quick.json()["result"]["hits"]
                queued.join(timeout=WAIT_S * 2)  # its 1 s deadline passes while it waits for the worker
                assert not hold.released
            finally:
                hold.release()
            first.join(timeout=WAIT_S * 2)
            assert answers["first"].status_code == 200, answers["first"].text
            late = answers["queued"]
            assert late.status_code == 504, late.text
            assert (
                late.json()["error"]["detail"]["done"] == "nothing: it waited for a free graph-query worker"
            )
            # Once the worker was free the queued query gave its slot back without starting any work.
            assert wait_for(lambda: svc.limiter.in_flight() == 0)
            assert len(opened) == 2  # the first global query and the vector query
            assert asked and not any("Marley's partner" in m for m in asked)
    os.environ.pop(LLM_KEY_ENV, None)
