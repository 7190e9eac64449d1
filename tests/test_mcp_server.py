"""The MCP server through the real MCP SDK client: over stdio (a subprocess) and over streamable HTTP."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from pipeline.service.queries import QueryService
from tests.support.mcp_server import error_of, server_env, stdio_server
from tests.support.service_data import KEY_A, KEY_B, ServiceData, offline_settings, serving

TOOLS = {
    "global_search",
    "local_search",
    "drift_search",
    "basic_search",
    "lazy_search",
    "auto_search",
    "chunk_graph_search",
    "vector_query",
    "list_documents",
}


async def exercise(client: Client) -> None:
    """List the tools (with their JSON schemas), call one, and be refused another tenant's namespace."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        schema = tool.input_schema
        assert {"namespace"} <= set(schema["required"]) and schema["properties"]["namespace"]["pattern"]
        assert "ctx" not in schema["properties"]
    result = await client.call_tool(
        "vector_query", {"namespace": "acme", "query": "Marley had been dead seven years.", "top_k": 2}
    )
    assert not result.is_error, result.content
    answer = result.structured_content
    assert answer["namespace"] == "acme" and answer["result"]["hits"][0]["text"].startswith(
        "Ebenezer Scrooge"
    )
    refused = await client.call_tool("vector_query", {"namespace": "globex", "query": "Marley"})
    assert error_of(refused)["code"] == "forbidden"
    invalid = await client.call_tool("local_search", {"namespace": "acme", "question": "x", "top_k": 0})
    assert invalid.is_error


@pytest.mark.matrix(doors=("MCP stdio",), modes=("vector",))
def test_stdio_client_lists_the_tools_and_calls_one(service_data: ServiceData) -> None:
    params = stdio_server(service_data)

    async def run() -> None:
        async with Client(params) as client:
            await exercise(client)

    asyncio.run(asyncio.wait_for(run(), timeout=600))  # a guard against a hang only


def test_stdio_server_refuses_to_start_with_a_bad_key(service_data: ServiceData) -> None:
    env = {**os.environ, **server_env(service_data, "grk_not-a-key")}
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.service", "mcp"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2 and "GRAPHRAG_API_KEY" in done.stderr
    assert "grk_not-a-key" not in done.stderr


@pytest.fixture(scope="module")
def base_url(service_data: ServiceData) -> Iterator[str]:
    svc = QueryService(offline_settings(service_data), embedder=service_data.embedder)
    with serving(svc) as url:
        yield url


def test_streamable_http_uses_each_requests_key(base_url: str) -> None:
    async def run(key: str) -> None:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
        async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
            await exercise(client) if key == KEY_A else None
            if key == KEY_B:  # tenant B's key reads globex, not acme
                ok = await client.call_tool("vector_query", {"namespace": "globex", "query": "Marley"})
                assert not ok.is_error
                assert error_of(await client.call_tool("vector_query", {"namespace": "acme", "query": "x"}))

    asyncio.run(asyncio.wait_for(run(KEY_A), timeout=600))  # guards against a hang only
    asyncio.run(asyncio.wait_for(run(KEY_B), timeout=600))
    # no key: refused at the door, before the MCP layer sees the request
    r = httpx.post(f"{base_url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401
