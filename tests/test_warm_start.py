"""The service's warm start and its first event under a busy lane, on the service tests' namespaces.

- A warm (`POST /v1/namespaces/{ns}/warm`) loads into the query caches every structure a question of any
  mode builds: after it, a question of each mode builds nothing (the caches' kinds and table versions are
  what the warm left). A second warm is free; a key that may not read the namespace gets 403 and warms
  nothing; reading a namespace's status warms it; the app warms the keys file's namespaces at start-up.
- With the only graph-query worker held by a query that waits on an event, a streamed local query's first
  event (`queued`, with its place) arrives while it still waits; once the worker is free it runs to `done`.
  A namespace not indexed yet is still the JSON 409 before any event.

Every wait ends on an event (the warm's state, the held query reaching its step); GUARD_S only guards a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.caches.index_cache import held_versions
from pipeline.query.common import events as ev
from pipeline.query.common.mode import Mode
from pipeline.query.common.scope import QueryScope
from pipeline.query.requests import QueryOptions
from pipeline.service.errors import IndexNotReady
from pipeline.service.models import bodies
from pipeline.service.queries import QueryService
from tests.support.service_data import BODIES, KEY_A, KEY_B, ServiceData, auth, offline_settings, serving

GUARD_S = 120.0


def pinned(service: QueryService, namespace: str) -> NamespaceStore:
    return NamespaceStore.from_settings(service.settings, namespace).pinned()


@contextlib.contextmanager
def copied(data: ServiceData, folder: Path, **settings: Any) -> Iterator[QueryService]:
    """An offline service over a copy of the service namespaces: a storage root no earlier test's
    questions have loaded into this process's caches."""
    storage = folder / "storage"
    shutil.copytree(data.storage_root, storage)
    service = QueryService(offline_settings(data, storage_root=storage, **settings), embedder=data.embedder)
    service.warm_up()
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def own_copy(service_data: ServiceData, tmp_path: Path) -> Iterator[QueryService]:
    """`copied`, warming only what is asked for (no start-up warm of the keys file's namespaces)."""
    with copied(service_data, tmp_path, service_warm_start=False) as service:
        yield service


def test_a_warm_loads_what_every_modes_first_question_builds(own_copy: QueryService) -> None:
    service = own_copy
    assert held_versions(pinned(service, "acme")) == {}
    with serving(service) as url, httpx.Client(base_url=url, timeout=GUARD_S) as http:
        answered = http.post("/v1/namespaces/acme/warm", headers=auth(KEY_A))
        assert answered.status_code == 200, answered.text
        assert answered.json()["namespace"] == "acme"
        assert answered.json()["state"] in ("queued", "warming", "warm")
        state = service.warmer.wait("acme", GUARD_S)
        assert state is not None and state["state"] == "warm", state
        assert not state["failed"] and not state["absent"]
        held = held_versions(pinned(service, "acme"))
        # local's graph and passages, the entity, report and passage vectors, global's tree and contexts
        assert {
            "local",
            "passages",
            "vectors:entities",
            "vectors:community_reports",
            "vectors:text_unit_pieces",
            "rows:text_units",
            "similarity_levels",
            "community_tree",
            "global_contexts",
        } <= set(held)
        assert service.warmer.process_warm.is_set()

        for kind, body in BODIES.items():
            response = http.post(f"/v1/query/{kind}", json=body, headers=auth(KEY_A))
            assert response.status_code == 200, (kind, response.text)
            assert held_versions(pinned(service, "acme")) == held, f"a {kind} question built more"

        again = http.post("/v1/namespaces/acme/warm", headers=auth(KEY_A)).json()
        assert again["state"] == "warm"  # answered at once: nothing to do
        assert service.warmer.wait("acme", GUARD_S)["warmed_at"] == state["warmed_at"]
        assert held_versions(pinned(service, "acme")) == held


def test_only_a_key_that_reads_the_namespace_warms_it_and_reading_its_status_does(
    own_copy: QueryService,
) -> None:
    service = own_copy
    with serving(service) as url, httpx.Client(base_url=url, timeout=GUARD_S) as http:
        refused = http.post("/v1/namespaces/globex/warm", headers=auth(KEY_A))
        assert refused.status_code == 403
        assert http.get("/v1/namespaces/globex/status", headers=auth(KEY_A)).status_code == 403
        assert service.warmer.state("globex") is None  # refused before anything was warmed
        status = http.get("/v1/namespaces/globex/status", headers=auth(KEY_B))
        assert status.status_code == 200
        assert status.json()["warm"]["state"] in ("queued", "warming", "warm")
        assert service.warmer.wait("globex", GUARD_S)["state"] == "warm"
        assert http.get("/v1/namespaces/globex/status", headers=auth(KEY_B)).json()["warm"]["state"] == "warm"
        empty = http.post("/v1/namespaces/acme-empty/warm", headers=auth(KEY_A))
        assert empty.status_code == 200
        assert service.warmer.wait("acme-empty", GUARD_S)["state"] == "not_indexed"
        ready = http.get("/readyz").json()
        assert ready["status"] == "ready" and ready["warm"]["warm"] >= 1


def test_the_app_warms_the_keys_files_namespaces_when_it_starts(
    service_data: ServiceData, tmp_path: Path
) -> None:
    with copied(service_data, tmp_path) as service, serving(service):
        assert service.warmer.wait("acme", GUARD_S)["state"] == "warm"
        assert service.warmer.wait("globex", GUARD_S)["state"] == "warm"
        assert service.warmer.wait("acme-empty", GUARD_S)["state"] == "not_indexed"
        assert held_versions(pinned(service, "globex"))


# ---- the first event before the worker -------------------------------------------------------------------
class HoldOptions(QueryOptions):
    """A graph-lane mode whose search holds its worker until the test lets it go."""


@dataclass
class Hold:
    reached: threading.Event
    release: threading.Event


HOLD = Hold(threading.Event(), threading.Event())


async def holding_search(scope: QueryScope, question: str, config: Any) -> Any:
    HOLD.reached.set()
    await asyncio.to_thread(HOLD.release.wait, GUARD_S)
    return _Held()


class _Held:
    def to_dict(self) -> dict[str, Any]:
        return {"status": "completed", "answer": "Held, then let go."}


HOLDING = Mode(
    name="hold",
    options=HoldOptions,
    configure=lambda settings, given: object(),
    search=holding_search,
    needs=(("parquet", schema.TEXT_UNITS),),
    uses_model=False,
    lane="graph",
)


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = None
    for line in lines:
        if line.startswith("event:"):
            kind = line.split(":", 1)[1].strip()
        elif line.startswith("data:") and kind is not None:
            yield kind, json.loads(line.split(":", 1)[1])


@pytest.fixture
def held_worker(service_data: ServiceData) -> Iterator[tuple[QueryService, str]]:
    """A served offline service with one graph worker, held by a `hold` query (on a thread) once it runs."""
    HOLD.reached.clear()
    HOLD.release.clear()
    with registry.registered(HOLDING):
        settings = offline_settings(service_data, service_graph_workers=1)
        service = QueryService(settings, embedder=service_data.embedder)
        service.warm_up()
        assert service.lanes.workers["graph"] == 1
        with serving(service) as url:
            holder = threading.Thread(
                target=lambda: httpx.post(
                    f"{url}/v1/query/hold",
                    json={"namespace": "acme", "question": "hold"},
                    headers=auth(KEY_A),
                    timeout=GUARD_S,
                )
            )
            holder.start()
            try:
                assert HOLD.reached.wait(GUARD_S), "the held query took the graph worker"
                yield service, url
            finally:
                HOLD.release.set()
                holder.join(GUARD_S)
        service.close()


def test_a_queued_streams_first_event_arrives_before_its_worker_starts(
    held_worker: tuple[QueryService, str],
) -> None:
    service, url = held_worker
    body = {**BODIES["local"], "stream": True}
    with (
        httpx.Client(base_url=url, timeout=GUARD_S) as http,
        http.stream("POST", "/v1/query/local", json=body, headers=auth(KEY_A)) as response,
    ):
        assert response.status_code == 200
        events = events_of(response.iter_lines())
        kind, data = next(events)
        assert not HOLD.release.is_set()  # the only graph worker is still held: this query waits
        assert kind == ev.QUEUED
        assert data == {"mode": "local", "lane": "graph", "ahead": 0, "workers": 1}
        HOLD.release.set()
        rest = list(events)
    kinds = [k for k, _ in rest]
    assert kinds[0] == ev.ROUTE and kinds[-1] == ev.DONE and ev.ERROR not in kinds
    assert set(kinds) <= set(ev.KINDS) and ev.QUEUED not in kinds
    assert rest[-1][1]["status"] == "completed"


def test_a_queued_query_on_a_namespace_not_indexed_sends_nothing_before_its_409(
    held_worker: tuple[QueryService, str],
) -> None:
    """No `queued` event for a namespace without the mode's tables: its refusal stays the first thing the
    stream says, which the HTTP door answers as the JSON 409 (test_service_stream)."""
    service, _url = held_worker
    principal = service.keys.authenticate(KEY_A)
    request = bodies()["local"](**{**BODIES["local"], "namespace": "acme-empty"})
    heard: list[str] = []

    async def queued_then_refused() -> None:
        query = await service.start(principal, request, lambda kind, _data: heard.append(kind))
        assert heard == []  # admitted behind the held worker, and said nothing
        HOLD.release.set()
        await query.wait()
        with pytest.raises(IndexNotReady):
            service.finish(query)

    asyncio.run(queued_then_refused())
    assert heard == []


def test_a_query_with_a_free_worker_starts_with_its_route(service_data: ServiceData) -> None:
    service = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    principal = service.keys.authenticate(KEY_A)
    request = bodies()["local"](**BODIES["local"])

    async def first() -> tuple[str, dict[str, Any]]:
        stream = service.stream(principal, request)
        try:
            return await anext(stream)
        finally:
            await stream.aclose()

    try:
        assert asyncio.run(first())[0] == ev.ROUTE
    finally:
        service.close()
