"""A namespace's documents and their status, read-only (issue 70's first part): `GET
/v1/namespaces/{ns}/documents`, a document's chunks, and the MCP tool `list_documents`, over the real
service on 127.0.0.1.
Each indexed document is listed from the committed `documents` table with its size, type and pages; a
file the ingest refused is listed `failed` with the reason it named; another tenant's key gets 403."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from pipeline.core import schema
from pipeline.index.run import index_folder
from pipeline.io.store import NamespaceStore
from pipeline.service.uploads.changes import file_id
from pipeline.settings import Settings
from tests.support.service_data import KEY_A, KEY_B, ServiceData, auth

GOOD = "Ada Abbot founded the Harbour Guild in Lisbon. Ben Brandt joined the guild in Porto a year later.\n"


@pytest.fixture(scope="module")
def refused(service_data: ServiceData, tmp_path_factory: pytest.TempPathFactory) -> str:
    """acme-empty (acme's, unindexed in `service_data`) indexed from a text file and a PDF that does
    not parse: one document indexed, one file refused."""
    folder = tmp_path_factory.mktemp("documents")
    (folder / "guild.txt").write_text(GOOD * 3, encoding="utf-8")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00 not a pdf body " * 40)
    settings = Settings(storage_root=service_data.storage_root, input_root=folder.parent)
    index_folder("acme-empty", folder, settings=settings, log=lambda _: None)
    return "acme-empty"


def test_the_documents_of_a_namespace_are_listed_with_their_size_and_status(
    service_client: httpx.Client, service_data: ServiceData
) -> None:
    got = service_client.get("/v1/namespaces/acme/documents", headers=auth(KEY_A))
    assert got.status_code == 200, got.text
    body = got.json()
    table = NamespaceStore(service_data.storage_root, "acme").pinned().read_table(schema.DOCUMENTS)
    rows = {r["id"]: r for r in table.to_pylist()}
    assert {d["content_hash"] for d in body["documents"]} == set(rows) and rows
    for doc in body["documents"]:
        row = rows[doc["content_hash"]]
        name = row["source_path"] or row["title"]  # a document made in code has no file
        assert (doc["name"], doc["size"], doc["status"]) == (name, row["n_bytes"], "indexed")
        assert doc["id"] == file_id(name) and doc["index_ids"] == [row["id"]]
        assert doc["reason"] is None and body["writable"] is False
        suffix = Path(name).suffix.lstrip(".") or None  # what the name says, where the parse recorded none
        assert doc["type"] == (json.loads(row["metadata"] or "{}").get("format") or suffix)
    names = [d["name"].lower() for d in body["documents"]]
    assert names == sorted(names)


def test_a_refused_file_is_listed_failed_with_its_reason(service_client: httpx.Client, refused: str) -> None:
    body = service_client.get(f"/v1/namespaces/{refused}/documents", headers=auth(KEY_A)).json()
    by_name = {d["name"]: d for d in body["documents"]}
    assert set(by_name) == {"guild.txt", "broken.pdf"}, body
    assert by_name["guild.txt"]["status"] == "indexed" and by_name["guild.txt"]["type"] == "txt"
    broken = by_name["broken.pdf"]
    assert broken["status"] == "failed" and broken["type"] == "pdf"
    assert broken["reason"] and broken["detail"] and broken["content_hash"] is None
    assert body["index_version"] is not None


def test_another_tenants_key_gets_403_whether_or_not_the_namespace_exists(
    service_client: httpx.Client,
) -> None:
    for namespace in ("acme", "no-such-namespace"):
        refused = service_client.get(f"/v1/namespaces/{namespace}/documents", headers=auth(KEY_B))
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"


def test_the_mcp_tool_lists_the_same_documents(
    service_client: httpx.Client, service_url: str, refused: str
) -> None:
    listed = service_client.get(f"/v1/namespaces/{refused}/documents", headers=auth(KEY_A)).json()

    async def call(key: str, namespace: str) -> Any:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{service_url}/mcp", http_client=http)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "list_documents" in tools
            return await client.call_tool("list_documents", {"namespace": namespace})

    mine = asyncio.run(asyncio.wait_for(call(KEY_A, refused), timeout=300))  # guards against a hang only
    assert not mine.is_error and mine.structured_content == listed
    theirs = asyncio.run(asyncio.wait_for(call(KEY_B, refused), timeout=300))
    assert theirs.is_error and json.loads(theirs.content[0].text)["error"]["code"] == "forbidden"


def test_a_documents_chunks_are_its_text_units_in_order_with_their_entities(
    service_client: httpx.Client, service_data: ServiceData, refused: str
) -> None:
    store = NamespaceStore(service_data.storage_root, refused).pinned()
    (doc,) = store.read_table(schema.DOCUMENTS, columns=["id", "title", "source_path"]).to_pylist()
    path = f"/v1/namespaces/{refused}/documents/{doc['id']}/chunks"
    got = service_client.get(path, headers=auth(KEY_A))
    assert got.status_code == 200, got.text
    body = got.json()
    by_file = service_client.get(  # the documents list's id (the file's) names the same document
        f"/v1/namespaces/{refused}/documents/{file_id(doc['source_path'])}/chunks", headers=auth(KEY_A)
    )
    assert by_file.json() == body
    assert body["document"] == {"id": doc["id"], "name": "guild.txt"}
    units = sorted(store.read_table(schema.TEXT_UNITS).to_pylist(), key=lambda u: u["chunk_index"])
    assert [c["id"] for c in body["chunks"]] == [u["id"] for u in units]
    titles = {e["id"]: e["title"] for e in store.read_table(schema.ENTITIES).to_pylist()}
    for chunk, unit in zip(body["chunks"], units, strict=True):
        assert (chunk["text"], chunk["tokens"]) == (unit["text"], unit["n_tokens"])
        assert (chunk["start_char"], chunk["end_char"]) == (unit["start_char"], unit["end_char"])
        assert chunk["entities"] == sorted({titles[e] for e in unit["entity_ids"] or [] if e in titles})
    assert any("Ada Abbot" in c["entities"] for c in body["chunks"]), body["chunks"]
    missing = service_client.get(f"/v1/namespaces/{refused}/documents/nope/chunks", headers=auth(KEY_A))
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert service_client.get(path, headers=auth(KEY_B)).status_code == 403


def test_a_namespace_never_indexed_lists_no_documents(tmp_path: Path) -> None:
    from pipeline.service.documents import document_list

    assert document_list(NamespaceStore(tmp_path, "fresh")) == {
        "namespace": "fresh",
        "index_version": None,
        "documents": [],
    }
