"""The MCP server as a client starts it: `stdio_server` is `pipeline.service mcp` over stdio, a child
process serving the service tests' data as one key; `error_of` is a refused tool call's error object."""

from __future__ import annotations

import json
import sys

from mcp.client.stdio import StdioServerParameters

from tests.support.processes import REPO_ROOT
from tests.support.service_data import KEY_A, ServiceData


def server_env(data: ServiceData, key: str) -> dict[str, str]:
    return {
        "PIPELINE_STORAGE_ROOT": str(data.storage_root),
        "PIPELINE_API_KEYS_FILE": str(data.keys_file),
        "GRAPHRAG_API_KEY": key,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        # not a deadline test: a cold model load on a loaded machine must not meet the 30 s default
        "PIPELINE_SERVICE_TIMEOUT_S": "110",
    }


def stdio_server(data: ServiceData, key: str = KEY_A) -> StdioServerParameters:
    """`pipeline.service mcp` as an MCP client starts it: a real child process over stdio, as `key`."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "pipeline.service", "mcp"],
        env=server_env(data, key),
        cwd=REPO_ROOT,
    )


def error_of(result) -> dict:  # noqa: ANN001 - mcp_types.CallToolResult
    assert result.is_error
    return json.loads(result.content[0].text)["error"]
