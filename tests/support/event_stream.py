"""The service's server-sent events read back: `parse` splits a stream's body into (kind, data) pairs,
checking each event is an `event:` line then one `data:` line of JSON."""

from __future__ import annotations

import json
from typing import Any


def parse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Server-sent events as (kind, data), checking each is `event:` then one `data:` line of JSON."""
    out = []
    for block in text.split("\n\n"):
        if block.strip():
            event, data = block.split("\n")
            assert event.startswith("event: ") and data.startswith("data: "), block
            out.append((event.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out
