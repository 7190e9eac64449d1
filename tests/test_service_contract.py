"""One contract at both doors (HTTP and MCP over streamable HTTP), with two tenants whose namespaces hold
DIFFERENT text under ONE storage root: tenb's every paragraph, entity, relationship and report carries a
word that tena's never does, so a leak from tenb into any of tena's answers shows as that word.

Also: filter errors are 422 naming the field (no LanceDB internals), MCP refuses unknown arguments with
the HTTP API's JSON error object, and deeply nested JSON is 422 "nested too deeply".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.io.store import NamespaceStore
from pipeline.service.auth import hash_key
from pipeline.service.queries import QueryService
from tests.support import tiny_index as tiny
from tests.support.service_data import ServiceData, build_service_namespace, offline_settings, serving

KEY_A = "grk_contract-a-0123456789abcdef"
KEY_B = "grk_contract-b-fedcba9876543210"
CANARY = "zebrafinch"  # in every text of tenb, in none of tena's

BODIES: dict[str, dict[str, Any]] = {
    "global": {"question": "What is Scrooge's business world like?"},
    "local": {"question": "How is Scrooge related to Bob Cratchit?"},
    "drift": {"question": "How is Scrooge related to Bob Cratchit?", "depth": 1},
    "basic": {"question": "How is Scrooge related to Bob Cratchit?", "top_k": 2},
    "lazy": {"question": "How is Scrooge related to Bob Cratchit?", "budget": 6},
    "auto": {"question": "Summarize the story as a whole."},
    "chunks": {"query": "Who is Marley?", "top_k": 2},
    "vector": {"query": "Marley had been dead seven years.", "top_k": 2},
}
TOOLS = {
    "global": "global_search",
    "local": "local_search",
    "drift": "drift_search",
    "basic": "basic_search",
    "lazy": "lazy_search",
    "auto": "auto_search",
    "chunks": "chunk_graph_search",
    "vector": "vector_query",
}


def mark(text: str, word: str) -> str:
    """`word` at the end of every sentence, so that any sentence an offline answer quotes carries it; but
    for the claim's quote, which the tiny index looks up verbatim."""
    return re.sub(r"(?<!seven years)\.", f" {word}.", text)


@contextlib.contextmanager
def marked_text(word: str) -> Iterator[None]:
    """The tiny corpus with `word` in every paragraph, description and report while a namespace is built."""
    saved = {n: getattr(tiny, n) for n in ("PARAGRAPHS", "ENTITIES", "RELATIONSHIP_DESCRIPTIONS", "REPORTS")}
    tiny.PARAGRAPHS = [mark(p, word) for p in saved["PARAGRAPHS"]]
    tiny.ENTITIES = {k: (t, ty, al, mark(d, word), us) for k, (t, ty, al, d, us) in saved["ENTITIES"].items()}
    tiny.RELATIONSHIP_DESCRIPTIONS = {k: mark(d, word) for k, d in saved["RELATIONSHIP_DESCRIPTIONS"].items()}
    tiny.REPORTS = {c: (f"{t} {word}", mark(s, word)) for c, (t, s) in saved["REPORTS"].items()}
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(tiny, name, value)


@pytest.fixture(scope="module")
def contract_data(tmp_path_factory: pytest.TempPathFactory) -> ServiceData:
    """Two tenants, tena and tenb, on one storage root; every text of tenb carries the canary word."""
    root = tmp_path_factory.mktemp("contract")
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(root / "cache.sqlite"))
    storage = root / "storage"  # one root for both tenants
    build_service_namespace(NamespaceStore(storage, "tena"), embedder)
    with marked_text(CANARY):
        build_service_namespace(NamespaceStore(storage, "tenb"), embedder)
    keys = root / "keys.json"
    keys.write_text(
        json.dumps(
            {
                "a": {"key_sha256": hash_key(KEY_A), "namespaces": ["tena"]},
                "b": {"key_sha256": hash_key(KEY_B), "namespaces": ["tenb"]},
            }
        )
    )
    return ServiceData(storage, keys, embedder)


@pytest.fixture(scope="module")
def service(contract_data: ServiceData) -> QueryService:
    svc = QueryService(
        offline_settings(contract_data, service_key_concurrency=4, service_max_body_bytes=65_536),
        embedder=contract_data.embedder,
    )
    svc.warm_up()
    return svc


@pytest.fixture(scope="module")
def base_url(service: QueryService) -> Iterator[str]:
    with serving(service) as url:
        yield url


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=120) as c:
        yield c


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def mcp_calls(base_url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each (tool, arguments) called in one MCP session over streamable HTTP with `key`."""

    async def run() -> list[Any]:
        http = create_mcp_http_client(headers=auth(key))
        async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as mcp:
            return [await mcp.call_tool(name, args) for name, args in calls]

    return asyncio.run(asyncio.wait_for(run(), timeout=600))  # a guard against a hang only


def mcp_error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


def mcp_text(result: Any) -> str:
    return json.dumps(result.structured_content) + "".join(getattr(c, "text", "") for c in result.content)


# ---- isolation: every mode, every tool, one storage root, different text ----------------------------------
def test_canary_is_in_tenb_and_not_in_tena(contract_data: ServiceData) -> None:
    a = NamespaceStore(contract_data.storage_root, "tena").read_table("text_units").column("text").to_pylist()
    b = NamespaceStore(contract_data.storage_root, "tenb").read_table("text_units").column("text").to_pylist()
    assert not any(CANARY in t for t in a) and all(CANARY in t for t in b)


@pytest.mark.parametrize("kind", list(BODIES))
def test_http_every_mode_answers_from_its_own_namespace_only(client: httpx.Client, kind: str) -> None:
    # tenb first, so that whatever a mode caches from it is in memory when tena is asked
    b = client.post(f"/v1/query/{kind}", json={"namespace": "tenb", **BODIES[kind]}, headers=auth(KEY_B))
    assert b.status_code == 200, b.text
    assert CANARY in b.text, f"{kind}: tenb's answer lacks tenb's text, so the test could not see a leak"
    a = client.post(f"/v1/query/{kind}", json={"namespace": "tena", **BODIES[kind]}, headers=auth(KEY_A))
    assert a.status_code == 200, a.text
    assert CANARY not in a.text, f"{kind}: tenb's text in tena's answer"
    cross = client.post(f"/v1/query/{kind}", json={"namespace": "tenb", **BODIES[kind]}, headers=auth(KEY_A))
    assert cross.status_code == 403 and CANARY not in cross.text


def test_mcp_every_tool_answers_from_its_own_namespace_only(base_url: str) -> None:
    kinds = list(BODIES)
    from_b = mcp_calls(base_url, KEY_B, [(TOOLS[k], {"namespace": "tenb", **BODIES[k]}) for k in kinds])
    from_a = mcp_calls(
        base_url,
        KEY_A,
        [(TOOLS[k], {"namespace": ns, **BODIES[k]}) for k in kinds for ns in ("tena", "tenb")],
    )
    for n, kind in enumerate(kinds):
        b, a, cross = from_b[n], from_a[2 * n], from_a[2 * n + 1]
        assert not b.is_error and CANARY in mcp_text(b), (kind, b.content)
        assert not a.is_error, (kind, a.content)
        assert CANARY not in mcp_text(a), f"{kind}: tenb's text in tena's MCP answer"
        assert mcp_error(cross)["code"] == "forbidden" and CANARY not in mcp_text(cross)


# ---- filter errors ----------------------------------------------------------------------------------------
LEAKS = ("/root/", ".rs:", "cargo", "Schema error", "FixedSizeList", "Int64", "Utf8", "Valid fields are")


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        ('{"nosuch": 1}', ["'nosuch'", "document_title"]),
        ('{"n_tokens": "abc"}', ["'n_tokens'", "integer"]),
        ('{"document_title": {"$gt": 5}}', ["'document_title'", "string"]),
        ('{"vector": 1}', ["'vector'"]),
        ('{"n_tokens": NaN}', ["'n_tokens'", "finite"]),
        ('{"n_tokens": {"$lt": Infinity}}', ["'n_tokens'", "finite"]),
        ('{"i\\n": 1}', ["field name"]),
    ],
)
def test_http_filter_errors_are_422_naming_the_field(
    client: httpx.Client, contract_data: ServiceData, content: str, needles: list[str]
) -> None:
    body = f'{{"namespace": "tena", "query": "Marley", "filter": {content}}}'
    r = client.post(
        "/v1/query/vector", content=body, headers={**auth(KEY_A), "Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    for needle in needles:
        assert needle in error["message"], error
    for leak in (*LEAKS, str(contract_data.storage_root)):
        assert leak not in r.text, r.text


def test_mcp_filter_errors_are_the_json_error(base_url: str) -> None:
    (out,) = mcp_calls(
        base_url, KEY_A, [("vector_query", {"namespace": "tena", "query": "x", "filter": {"nosuch": 1}})]
    )
    error = mcp_error(out)
    assert error["code"] == "invalid_request" and "'nosuch'" in error["message"]
    assert not any(leak in error["message"] for leak in LEAKS)


# ---- MCP validates as HTTP does ---------------------------------------------------------------------------
def test_mcp_refuses_unknown_arguments_with_the_json_error(base_url: str, client: httpx.Client) -> None:
    calls = [
        (TOOLS[k], {"namespace": "tena", "Namespace": "tenb", **BODIES[k]})
        for k in ("vector", "local", "global")
    ]
    calls.append(("vector_query", {"namespace": "tena", "query": "x", "topk": 3}))
    results = mcp_calls(base_url, KEY_A, calls)
    for (_, args), result in zip(calls, results, strict=True):
        error = mcp_error(result)
        unknown = "Namespace" if "Namespace" in args else "topk"
        assert error["code"] == "invalid_request" and unknown in error["message"], error
        assert any(d["loc"] == [unknown] for d in error["detail"]), error
    # the same request over HTTP: the same code, and the same field named
    r = client.post(
        "/v1/query/vector", json={"namespace": "tena", "query": "x", "topk": 3}, headers=auth(KEY_A)
    )
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    assert any(d["loc"][-1] == "topk" for d in r.json()["error"]["detail"])


def test_mcp_validation_errors_are_the_json_error_object(base_url: str) -> None:
    calls = [
        ("local_search", {"namespace": "tena", "question": "x", "top_k": 0}),
        ("vector_query", {"namespace": "Not Valid", "query": "x"}),
        ("vector_query", {"namespace": "tena"}),
        ("basic_search", {"namespace": "tena", "question": "   "}),
    ]
    for (_, args), result in zip(calls, mcp_calls(base_url, KEY_A, calls), strict=True):
        error = mcp_error(result)  # JSON, not "Error executing tool ..." text
        assert error["code"] == "invalid_request" and error["message"] and error["detail"], (args, error)


# ---- deep JSON --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("depth", "nest"), [(100, "object"), (900, "list"), (5000, "list")])
def test_deeply_nested_json_is_422_nested_too_deeply(client: httpx.Client, depth: int, nest: str) -> None:
    nested = '{"a": ' * depth + "1" + "}" * depth if nest == "object" else "[" * depth + "]" * depth
    for body in (
        f'{{"namespace": "tena", "query": "x", "filter": {nested}}}',
        f'{{"namespace": {nested}, "query": "x"}}',
    ):
        r = client.post(
            "/v1/query/vector", content=body, headers={**auth(KEY_A), "Content-Type": "application/json"}
        )
        assert r.status_code == 422, (depth, r.status_code, r.text[:300])
        error = r.json()["error"]
        assert error["code"] == "invalid_request" and "nested too deeply" in error["message"], error


def test_json_nested_within_the_limit_is_judged_on_its_fields(client: httpx.Client) -> None:
    nested = "[" * 40 + "]" * 40
    r = client.post(
        "/v1/query/vector",
        json={"namespace": "tena", "query": "x", "top_k": json.loads(nested)},
        headers=auth(KEY_A),
    )
    assert r.status_code == 422 and "top_k" in r.json()["error"]["message"], r.text
