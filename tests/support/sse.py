"""Server-sent events as OpenAI-compatible servers stream chat replies, for the scripted server.

`to_events(completion)` turns a whole chat completion (the JSON a non-streaming request gets) into the
chunks a streaming request gets, so that every scripted fault that rewrites a reply works on both.
"""

from __future__ import annotations

import json
from typing import Any

PIECE_CHARS = 12  # characters of content per chunk: several chunks per reply, as a model sends them


def wants_stream(request: Any) -> bool:
    return isinstance(request, dict) and request.get("stream") is True


def unstreamed(request: dict[str, Any]) -> bytes:
    """The same request asking for a whole reply (what the proxy sends upstream to rewrite it)."""
    whole = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    return json.dumps(whole).encode()


def event(data: Any) -> bytes:
    return b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


def to_events(completion: bytes, request: dict[str, Any]) -> bytes:
    """The SSE body of a streamed reply carrying what `completion` (a chat.completion JSON) says; the
    usage chunk only when the request asked for it (`stream_options.include_usage`), as OpenAI does."""
    try:
        data = json.loads(completion)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return completion  # not a completion (an error body): sent as it is
    base = {k: data.get(k) for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    parts = [chunk({"role": "assistant", "content": ""})]
    reasoning = message.get("reasoning_content") or ""
    for i in range(0, len(reasoning), PIECE_CHARS):
        parts.append(chunk({"reasoning_content": reasoning[i : i + PIECE_CHARS]}))
    content = message.get("content") or ""
    for i in range(0, len(content), PIECE_CHARS):
        parts.append(chunk({"content": content[i : i + PIECE_CHARS]}))
    parts.append(chunk({}, choice.get("finish_reason") or "stop"))
    if (request.get("stream_options") or {}).get("include_usage") and data.get("usage"):
        parts.append(event({**base, "choices": [], "usage": data["usage"]}))
    parts.append(event(b"[DONE]"))
    return b"".join(parts)
