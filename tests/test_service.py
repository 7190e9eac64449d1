"""The query service over real HTTP on 127.0.0.1: uvicorn in a thread, real Parquet/LanceDB/MiniLM indexes.

Two tenants (acme, globex) each own a namespace built by hand (`tests.support.service_data`: the tiny
graph of `tests.support.tiny_index` plus its chunk graph); `acme-empty` is acme's but not indexed yet.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from tests.support.service_data import (
    BODIES,
    KEY_A,
    KEY_B,
    ServiceData,
    auth,
    offline_settings,
)


# ---- every endpoint answers --------------------------------------------------------------------------
@pytest.mark.matrix(
    doors=("HTTP JSON",), modes=("basic", "local", "drift", "global", "lazy", "auto", "chunks", "vector")
)
def test_each_endpoint_answers_for_its_tenant(service_client: httpx.Client) -> None:
    answers = {}
    for kind, body in BODIES.items():
        r = service_client.post(f"/v1/query/{kind}", json=body, headers=auth(KEY_A))
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
    r = service_client.post("/v1/query/vector", json=BODIES["vector"], headers={"X-API-Key": KEY_A})
    assert r.status_code == 200


def test_status_lists_tables_rows_times_and_readiness(service_client: httpx.Client) -> None:
    r = service_client.get("/v1/namespaces/acme/status", headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    status = r.json()
    tables = {(t["kind"], t["name"]): t for t in status["tables"]}
    assert tables[("parquet", "text_units")]["rows"] == 4
    assert tables[("snapshot", "chunk_graph")]["rows"] == 4
    assert status["indexed"] and all(status["ready"].values())
    empty = service_client.get("/v1/namespaces/acme-empty/status", headers=auth(KEY_A)).json()
    assert empty == {
        "namespace": "acme-empty",
        "indexed": False,
        "tables": [],
        "ready": empty["ready"],
        "warm": empty["warm"],  # reading the status started its warm start (tests/test_warm_start.py)
    }
    assert not any(empty["ready"].values()) and empty["warm"]["state"] in ("queued", "not_indexed")


def test_openapi_health_and_readiness(service_client: httpx.Client) -> None:
    spec = service_client.get("/openapi.json").json()
    for path in (f"/v1/query/{kind}" for kind in BODIES):
        assert "requestBody" in spec["paths"][path]["post"]
        assert {"401", "403", "409", "422", "429", "504"} <= set(spec["paths"][path]["post"]["responses"])
    assert "/v1/namespaces/{namespace}/status" in spec["paths"]
    assert service_client.get("/healthz").json() == {"status": "ok"}
    assert service_client.get("/readyz").status_code == 200


def test_warm_up_loads_the_question_parse_model_so_the_first_query_does_not(
    service_data: ServiceData,
) -> None:
    from pipeline.core import ner

    ner._model = None  # whatever an earlier query of this process loaded
    svc = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    assert not svc.warm.is_set()
    svc.warm_up()
    assert svc.warm.is_set() and ner._model is not None


# ---- tenancy and auth ----------------------------------------------------------------------------------
def test_missing_or_bad_key_is_401(service_client: httpx.Client) -> None:
    for headers in ({}, auth("grk_wrong"), {"Authorization": "Basic Zm9vOmJhcg=="}, {"X-API-Key": ""}):
        r = service_client.post("/v1/query/vector", json=BODIES["vector"], headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    # checked before the body is read: a bad key with a malformed body is still 401
    r = service_client.post("/v1/query/vector", content=b"{not json", headers=auth("grk_wrong"))
    assert r.status_code == 401
    assert service_client.get("/v1/namespaces/acme/status").status_code == 401


def test_a_tenant_cannot_read_or_probe_another_tenants_namespace(
    service_client: httpx.Client, service_data: ServiceData
) -> None:
    before = sorted(p.name for p in service_data.storage_root.iterdir())
    for kind, body in BODIES.items():
        existing = service_client.post(
            f"/v1/query/{kind}", json={**body, "namespace": "globex"}, headers=auth(KEY_A)
        )
        missing = service_client.post(
            f"/v1/query/{kind}", json={**body, "namespace": "nosuch"}, headers=auth(KEY_A)
        )
        assert existing.status_code == missing.status_code == 403
        # identical answers but for the name asked about: existence is not revealed
        assert existing.text.replace("globex", "X") == missing.text.replace("nosuch", "X")
        assert "Scrooge" not in existing.text
    s1 = service_client.get("/v1/namespaces/globex/status", headers=auth(KEY_A))
    s2 = service_client.get("/v1/namespaces/nosuch/status", headers=auth(KEY_A))
    assert s1.status_code == s2.status_code == 403
    assert s1.text.replace("globex", "X") == s2.text.replace("nosuch", "X")
    # tenant B reads its own namespace; and the refusals created nothing on disk
    r = service_client.post(
        "/v1/query/vector", json={**BODIES["vector"], "namespace": "globex"}, headers=auth(KEY_B)
    )
    assert r.status_code == 200 and r.json()["result"]["hits"][0]["document_id"] == "doc-globex"
    assert sorted(p.name for p in service_data.storage_root.iterdir()) == before


def test_keys_never_appear_in_logs(service_client: httpx.Client, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        service_client.post("/v1/query/vector", json=BODIES["vector"], headers=auth(KEY_A))
        service_client.post("/v1/query/vector", json=BODIES["vector"], headers={"X-API-Key": KEY_B + "x"})
        service_client.post(
            "/v1/query/vector", json={**BODIES["vector"], "namespace": "globex"}, headers=auth(KEY_A)
        )
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "query kind=vector tenant=acme" in text  # the service does log its queries...
    assert KEY_A not in text and KEY_B not in text  # ...but never a key


# ---- index not ready, limits, validation ---------------------------------------------------------------
def test_index_not_ready_is_a_clear_error(service_client: httpx.Client, service_data: ServiceData) -> None:
    for kind, body in BODIES.items():
        r = service_client.post(
            f"/v1/query/{kind}", json={**body, "namespace": "acme-empty"}, headers=auth(KEY_A)
        )
        assert r.status_code == 409, r.text
        error = r.json()["error"]
        assert error["code"] == "index_not_ready" and "pipeline index" in error["message"]
        assert "Traceback" not in r.text and str(service_data.storage_root) not in r.text
    assert not (service_data.storage_root / "acme-empty").exists()  # asking created nothing


def test_output_is_bounded_with_a_truncated_flag(service_client: httpx.Client) -> None:
    r = service_client.post("/v1/query/local", json=BODIES["local"], headers=auth(KEY_A))
    body = r.json()
    assert len(body["result"]["evidence"]) == 3 and body["truncated"] is True  # the index yields more


def test_oversized_body_is_413(service_client: httpx.Client) -> None:
    big = {**BODIES["vector"], "query": "x" * 5000}
    r = service_client.post("/v1/query/vector", json=big, headers=auth(KEY_A))
    assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"

    def chunked() -> Iterator[bytes]:  # no Content-Length: the body is counted as it arrives
        yield b'{"namespace": "acme", "query": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = service_client.post("/v1/query/vector", content=chunked(), headers=auth(KEY_A))
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
    service_client: httpx.Client, content: bytes, needle: str
) -> None:
    r = service_client.post(
        "/v1/query/vector", content=content, headers={**auth(KEY_A), "Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request" and needle in error["message"], error


def test_library_validation_errors_are_422(service_client: httpx.Client) -> None:
    r = service_client.post(
        "/v1/query/local", json={**BODIES["local"], "community_level": 7}, headers=auth(KEY_A)
    )
    assert r.status_code == 422 and "does not exist" in r.json()["error"]["message"]


def test_keys_file_is_reread_when_it_changes(service_data: ServiceData, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"t": {"key_sha256": hash_key("k1"), "namespaces": ["acme"]}}))
    svc = QueryService(offline_settings(service_data, api_keys_file=keys), embedder=service_data.embedder)
    assert svc.authenticate({"X-API-Key": "k1"}).tenant == "t"
    keys.write_text(json.dumps({"t": {"key_sha256": [hash_key("k2")], "namespaces": ["acme"]}}))
    os.utime(keys, ns=(time.time_ns(), time.time_ns() + 10**9))
    with pytest.raises(Exception, match="unknown API key"):
        svc.authenticate({"X-API-Key": "k1"})
    assert svc.authenticate({"X-API-Key": "k2"}).namespaces == frozenset({"acme"})


def test_vector_filter_goes_through_the_vector_tool(service_client: httpx.Client) -> None:
    body = {**BODIES["vector"], "top_k": 4, "filter": {"end_char": {"$gt": 250}}}
    r = service_client.post("/v1/query/vector", json=body, headers=auth(KEY_A))
    assert r.status_code == 200, r.text
    hits = r.json()["result"]["hits"]
    assert hits and all(h["end_char"] > 250 for h in hits)
    bad = service_client.post(
        "/v1/query/vector", json={**body, "filter": {"x": {"$regex": 1}}}, headers=auth(KEY_A)
    )
    assert bad.status_code == 422, bad.text
