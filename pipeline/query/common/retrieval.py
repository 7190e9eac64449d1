"""What the retrieval-only modes (the chunk graph, the vector query) share: their result, hits without
an answer, and the stop between their steps.

They call no model, so nothing else would notice a deadline: each step starts only if the query is
still wanted (`checkpoint`), so a query past its deadline frees its worker one step later instead of
finishing its search.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.query.common.scope import QueryScope


@dataclass
class Hits:
    """Ranked text chunks for `query`; `status` is completed, no_results, degraded or cancelled."""

    query: str | None
    status: str
    hits: list[Any] = field(default_factory=list)  # dicts, or objects with to_dict()
    reason: str | None = None  # degraded, cancelled: why (safe to answer)
    cause: str | None = None  # degraded: the store's own message (server paths): logged, never answered
    sources: list[dict[str, Any]] = field(default_factory=list)  # the vector tool's raw sources

    def to_dict(self) -> dict[str, Any]:
        if self.status == "cancelled":
            return {"status": self.status, "reason": self.reason}
        out: dict[str, Any] = {"query": self.query, "status": self.status}
        if self.reason is not None:
            out["reason"] = self.reason
        out["hits"] = [h.to_dict() if hasattr(h, "to_dict") else h for h in self.hits]
        return out


def checkpoint(scope: QueryScope, before: str) -> Hits | None:
    """A cancelled result once the query's deadline passed or its caller left, else None (go on)."""
    if scope.stopped():
        return Hits(None, "cancelled", reason=f"deadline passed before {before}")
    return None
