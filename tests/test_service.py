"""The query service over real HTTP on 127.0.0.1: uvicorn in a thread, real Parquet/LanceDB/MiniLM indexes.

Two tenants (acme, globex) each own a namespace built by hand (`build_tiny_index`, the local-search
test's graph) plus its chunk graph; `acme-empty` is acme's but not indexed yet.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pyarrow as pa
import pytest
import uvicorn

from deploy.local_cluster import free_port
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.chunk_graph.indexing import build_namespace_chunk_graph
from pipeline.core import schema
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.io.store import NamespaceStore
from pipeline.service.app import create_app, server_config
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from pipeline.settings import Settings
from tests import test_local_search
from tests.test_local_search import COMMUNITIES, build_tiny_index, eid

KEY_A = "grk_test-acme-0123456789abcdef"
KEY_B = "grk_test-globex-fedcba9876543210"
TENANTS = {"acme": ("acme", "acme-empty"), "globex": ("globex",)}


@dataclass
class ServiceData:
    storage_root: Path
    keys_file: Path
    embedder: CachedEmbedder


def build_service_namespace(store: NamespaceStore, embedder: CachedEmbedder) -> None:
    """One namespace with what every mode reads: the local-search test's graph, the columns global
    search reads, community reports and the chunk graph."""
    build_tiny_index(store, embedder)
    units = store.read_table(schema.TEXT_UNITS, columns=["id"]).column("id").to_pylist()
    # The hand-built graph lacks the columns global search reads; add them.
    store.write_table(
        schema.COMMUNITIES,
        pa.Table.from_pylist(
            [
                {
                    "community": c,
                    "level": lv,
                    "parent": p,
                    "children": ch,
                    "entity_ids": [eid(m) for m in mem],
                    "text_unit_ids": units[:2] if not ch else [],
                    "title": f"Community {c}",
                }
                for c, lv, p, ch, mem in COMMUNITIES
            ],
            schema=schema.COMMUNITIES_SCHEMA,
        ),
    )
    levels = {c: lv for c, lv, *_ in COMMUNITIES}
    store.write_table(
        schema.COMMUNITY_REPORTS,
        pa.Table.from_pylist(
            [
                {
                    "community": c,
                    "level": levels[c],
                    "title": t,
                    "summary": s,
                    "full_content": s,
                    "rank": 1.0,
                }
                for c, (t, s) in test_local_search.REPORTS.items()
            ],
            schema=schema.COMMUNITY_REPORTS_SCHEMA,
        ),
    )
    build_namespace_chunk_graph(store)


def build_service_data(root: Path) -> ServiceData:
    """Two indexed namespaces (with what global search and the chunk graph need) and a keys file."""
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(root / "cache.sqlite"))
    storage = root / "storage"
    for ns in ("acme", "globex"):
        build_service_namespace(NamespaceStore(storage, ns), embedder)
    keys_file = root / "keys.yaml"
    digest = {"acme": hash_key(KEY_A), "globex": hash_key(KEY_B)}
    keys_file.write_text(
        "tenants:\n"
        + "".join(
            f"  {t}:\n    key_sha256: {digest[t]}\n    namespaces: [{', '.join(ns)}]\n"
            for t, ns in TENANTS.items()
        )
    )
    return ServiceData(storage, keys_file, embedder)


@contextlib.contextmanager
def serving(service: QueryService) -> Iterator[str]:
    """The app under uvicorn on a free 127.0.0.1 port, in a thread; yields the base URL."""
    port = free_port()
    config = server_config(
        create_app(service), service.settings, host="127.0.0.1", port=port, log_config=None, access_log=True
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> ServiceData:
    return build_service_data(tmp_path_factory.mktemp("service"))


def offline_settings(data: ServiceData, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "storage_root": data.storage_root,
        "api_keys_file": data.keys_file,
        "service_key_concurrency": 2,
        "service_max_body_bytes": 4096,
        "service_max_evidence_items": 3,
        # A test that is not about deadlines must not meet one on a loaded machine (a cold model
        # load alone can take half a minute there); the deadline tests set their own.
        "service_timeout_s": 110.0,
    }
    return Settings(**{**values, **overrides})


@pytest.fixture(scope="module")
def service(data: ServiceData) -> QueryService:
    svc = QueryService(offline_settings(data), embedder=data.embedder)
    svc.warm_up()
    return svc


@pytest.fixture(scope="module")
def base_url(service: QueryService) -> Iterator[str]:
    with serving(service) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=60) as c:
        yield c


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


BODIES = {
    "global": {"namespace": "acme", "question": "What is Scrooge's business world like?"},
    "local": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?"},
    "drift": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "depth": 1},
    "basic": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "top_k": 2},
    "lazy": {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "budget": 6},
    "auto": {"namespace": "acme", "question": "Summarize the story as a whole."},
    "chunks": {"namespace": "acme", "query": "Who is Marley?", "top_k": 2},
    "vector": {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 2},
}


# ---- every endpoint answers --------------------------------------------------------------------------
@pytest.mark.matrix(
    doors=("HTTP JSON",), modes=("basic", "local", "drift", "global", "lazy", "auto", "chunks", "vector")
)
def test_each_endpoint_answers_for_its_tenant(client: httpx.Client) -> None:
    answers = {}
    for kind, body in BODIES.items():
        r = client.post(f"/v1/query/{kind}", json=body, headers=auth(KEY_A))
        assert r.status_code == 200, r.text
        answers[kind] = r.json()
        assert answers[kind]["namespace"] == "acme" and answers[kind]["kind"] == kind
        assert answers[kind]["status"] in ("completed", "partial"), answers[kind]
    assert answers["global"]["result"]["answer"] and answers["global"]["result"]["cited_communities"]
    local = answers["local"]["result"]
    assert local["answer"] and local["evidence"]
    ev = local["evidence"][0]
    assert ev["document_id"] == "doc-acme" and ev["end_char"] > ev["start_char"]
    drift = answers["drift"]["result"]
    assert drift["answer"] and drift["tree"]["id"] == 0 and drift["nodes"][0]["status"] == "answered"
    # the request's depth reached the search: one round of follow-ups, the bound computed from it
    cfg, usage = drift["config"], drift["usage"]
    assert cfg["depth"] == 1 and usage["max_calls"] == cfg["primer_folds"] + cfg["breadth"] + 1
    assert 0 < usage["follow_up_calls"] <= cfg["breadth"]
    basic = answers["basic"]["result"]
    assert basic["answer"] and basic["citations"]
    assert all(c["document_id"] == "doc-acme" and c["end_char"] > c["start_char"] for c in basic["citations"])
    lazy = answers["lazy"]["result"]
    assert lazy["answer"] and lazy["citations"] and 0 < lazy["units_tested"] <= 6
    auto = answers["auto"]["result"]
    assert (auto["route"], auto["router"]) == ("global", "offline") and auto["result"]["answer"]
    top = answers["vector"]["result"]["hits"][0]
    assert top["text"].startswith("Ebenezer Scrooge") and "vector" not in top
    assert len(answers["chunks"]["result"]["hits"]) == 2
    # X-API-Key works as well as a bearer token
    r = client.post("/v1/query/vector", json=BODIES["vector"], headers={"X-API-Key": KEY_A})
    assert r.status_code == 200


def test_status_lists_tables_rows_times_and_readiness(client: httpx.Client) -> None:
    r = client.get("/v1/namespaces/acme/status", headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    status = r.json()
    tables = {(t["kind"], t["name"]): t for t in status["tables"]}
    assert tables[("parquet", "text_units")]["rows"] == 4
    assert tables[("snapshot", "chunk_graph")]["rows"] == 4
    assert status["indexed"] and all(status["ready"].values())
    empty = client.get("/v1/namespaces/acme-empty/status", headers=auth(KEY_A)).json()
    assert empty == {"namespace": "acme-empty", "indexed": False, "tables": [], "ready": empty["ready"]}
    assert not any(empty["ready"].values())


def test_openapi_health_and_readiness(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    for path in (f"/v1/query/{kind}" for kind in BODIES):
        assert "requestBody" in spec["paths"][path]["post"]
        assert {"401", "403", "409", "422", "429", "504"} <= set(spec["paths"][path]["post"]["responses"])
    assert "/v1/namespaces/{namespace}/status" in spec["paths"]
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200


def test_warm_up_loads_the_question_parse_model_so_the_first_query_does_not(data: ServiceData) -> None:
    from pipeline.core import ner

    ner._model = None  # whatever an earlier query of this process loaded
    svc = QueryService(offline_settings(data), embedder=data.embedder)
    assert not svc.warm.is_set()
    svc.warm_up()
    assert svc.warm.is_set() and ner._model is not None


# ---- tenancy and auth ----------------------------------------------------------------------------------
def test_missing_or_bad_key_is_401(client: httpx.Client) -> None:
    for headers in ({}, auth("grk_wrong"), {"Authorization": "Basic Zm9vOmJhcg=="}, {"X-API-Key": ""}):
        r = client.post("/v1/query/vector", json=BODIES["vector"], headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    # checked before the body is read: a bad key with a malformed body is still 401
    r = client.post("/v1/query/vector", content=b"{not json", headers=auth("grk_wrong"))
    assert r.status_code == 401
    assert client.get("/v1/namespaces/acme/status").status_code == 401


def test_a_tenant_cannot_read_or_probe_another_tenants_namespace(
    client: httpx.Client, data: ServiceData
) -> None:
    before = sorted(p.name for p in data.storage_root.iterdir())
    for kind, body in BODIES.items():
        existing = client.post(f"/v1/query/{kind}", json={**body, "namespace": "globex"}, headers=auth(KEY_A))
        missing = client.post(f"/v1/query/{kind}", json={**body, "namespace": "nosuch"}, headers=auth(KEY_A))
        assert existing.status_code == missing.status_code == 403
        # identical answers but for the name asked about: existence is not revealed
        assert existing.text.replace("globex", "X") == missing.text.replace("nosuch", "X")
        assert "Scrooge" not in existing.text
    s1 = client.get("/v1/namespaces/globex/status", headers=auth(KEY_A))
    s2 = client.get("/v1/namespaces/nosuch/status", headers=auth(KEY_A))
    assert s1.status_code == s2.status_code == 403
    assert s1.text.replace("globex", "X") == s2.text.replace("nosuch", "X")
    # tenant B reads its own namespace; and the refusals created nothing on disk
    r = client.post("/v1/query/vector", json={**BODIES["vector"], "namespace": "globex"}, headers=auth(KEY_B))
    assert r.status_code == 200 and r.json()["result"]["hits"][0]["document_id"] == "doc-globex"
    assert sorted(p.name for p in data.storage_root.iterdir()) == before


def test_keys_never_appear_in_logs(client: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        client.post("/v1/query/vector", json=BODIES["vector"], headers=auth(KEY_A))
        client.post("/v1/query/vector", json=BODIES["vector"], headers={"X-API-Key": KEY_B + "x"})
        client.post("/v1/query/vector", json={**BODIES["vector"], "namespace": "globex"}, headers=auth(KEY_A))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "query kind=vector tenant=acme" in text  # the service does log its queries...
    assert KEY_A not in text and KEY_B not in text  # ...but never a key


# ---- index not ready, limits, validation ---------------------------------------------------------------
def test_index_not_ready_is_a_clear_error(client: httpx.Client, data: ServiceData) -> None:
    for kind, body in BODIES.items():
        r = client.post(f"/v1/query/{kind}", json={**body, "namespace": "acme-empty"}, headers=auth(KEY_A))
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert error["code"] == "index_not_ready" and "pipeline index" in error["message"]
        assert "Traceback" not in r.text and str(data.storage_root) not in r.text
    assert not (data.storage_root / "acme-empty").exists()  # asking created nothing


def test_output_is_bounded_with_a_truncated_flag(client: httpx.Client) -> None:
    r = client.post("/v1/query/local", json=BODIES["local"], headers=auth(KEY_A))
    body = r.json()
    assert len(body["result"]["evidence"]) == 3 and body["truncated"] is True  # the index yields more


def test_oversized_body_is_413(client: httpx.Client) -> None:
    big = {**BODIES["vector"], "query": "x" * 5000}
    r = client.post("/v1/query/vector", json=big, headers=auth(KEY_A))
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

    def chunked() -> Iterator[bytes]:  # no Content-Length: the body is counted as it arrives
        yield b'{"namespace": "acme", "query": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = client.post("/v1/query/vector", content=chunked(), headers=auth(KEY_A))
    assert r.status_code == 413


@pytest.mark.parametrize(
    "content, needle",
    [
        (b"{not json", "JSON"),
        (b'{"namespace": "acme"}', "query"),
        (b'{"namespace": "acme", "query": "x", "top_k": 0}', "top_k"),
        (b'{"namespace": "acme", "query": "x", "topk": 3}', "topk"),
        (b'{"namespace": "Not Valid", "query": "x"}', "namespace"),
        (b'{"namespace": "acme", "query": "   "}', "non-blank"),
        (b'{"namespace": "acme", "query": "x", "timeout_s": NaN}', "timeout_s"),
    ],
)
def test_invalid_requests_are_422_with_a_clear_message(
    client: httpx.Client, content: bytes, needle: str
) -> None:
    r = client.post(
        "/v1/query/vector", content=content, headers={**auth(KEY_A), "Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and needle in error["message"], error


def test_library_validation_errors_are_422(client: httpx.Client) -> None:
    r = client.post("/v1/query/local", json={**BODIES["local"], "community_level": 7}, headers=auth(KEY_A))
    assert r.status_code == 422 and "does not exist" in r.json()["error"]["message"]


def test_keys_file_is_reread_when_it_changes(data: ServiceData, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"t": {"key_sha256": hash_key("k1"), "namespaces": ["acme"]}}))
    svc = QueryService(offline_settings(data, api_keys_file=keys), embedder=data.embedder)
    assert svc.authenticate({"X-API-Key": "k1"}).tenant == "t"
    keys.write_text(json.dumps({"t": {"key_sha256": [hash_key("k2")], "namespaces": ["acme"]}}))
    os.utime(keys, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(Exception, match="unknown API key"):
        svc.authenticate({"X-API-Key": "k1"})
    assert svc.authenticate({"X-API-Key": "k2"}).namespaces == frozenset({"acme"})


def test_vector_filter_goes_through_the_vector_tool(client: httpx.Client) -> None:
    body = {**BODIES["vector"], "top_k": 4, "filter": {"end_char": {"$gt": 250}}}
    r = client.post("/v1/query/vector", json=body, headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    hits = r.json()["result"]["hits"]
    assert hits and all(h["end_char"] > 250 for h in hits)
    bad = client.post("/v1/query/vector", json={**body, "filter": {"x": {"$regex": 1}}}, headers=auth(KEY_A))
    assert bad.status_code == 422, bad.text
