"""MCP tools send a query's events as progress notifications, through the real MCP SDK client and the
stdio server (`python -m pipeline.service mcp`, a subprocess): one step per event, in order, the answer's
text arriving as it is written, and the tool's result unchanged (the HTTP API's JSON answer)."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.client import Client

from tests.support.mcp_server import stdio_server
from tests.support.service_data import ServiceData

ARGS = {"namespace": "acme", "question": "How is Scrooge related to Bob Cratchit?", "top_k": 2}


def test_a_tool_call_hears_the_querys_events_as_progress(service_data: ServiceData) -> None:
    params = stdio_server(service_data)
    heard: list[tuple[float, str | None]] = []

    async def progress(step: float, total: float | None, message: str | None) -> None:
        heard.append((step, message))

    async def run() -> tuple[Any, Any]:
        async with Client(params) as client:
            quiet = await client.call_tool("basic_search", ARGS)  # no progress asked: none sent
            return quiet, await client.call_tool("basic_search", ARGS, progress_callback=progress)

    quiet, result = asyncio.run(asyncio.wait_for(run(), timeout=600))  # a guard against a hang only
    assert not result.is_error, result.content
    answer = result.structured_content["result"]["answer"]
    assert result.structured_content["result"]["citations"] == quiet.structured_content["result"]["citations"]
    assert [step for step, _ in heard] == list(range(1, len(heard) + 1))
    messages = [m or "" for _, m in heard]
    assert messages[0] == "route: basic" and messages[1].startswith("context: 2 sources")
    citations = [m for m in messages if m.startswith("citation [")]
    assert len(citations) == len(result.structured_content["result"]["citations"]) > 0
    written = messages[2 : messages.index(citations[0])]
    assert len(written) > 1 and "".join(written) == answer
