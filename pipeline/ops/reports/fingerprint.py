"""The fingerprint of a community report: a hash of everything the report depends on.

Inputs: the member entities (id, title, type, description, degree), the relationships inside the
community (id, endpoints, description, weight, combined degree), the claims about its members, each
child's fingerprint and whether the child has a report, the budget and length settings, the prompt
(or offline method) version and the model. Community numbers and row numbers are left out on purpose:
they change when unrelated parts of the graph change, and the report never shows them. An equal
fingerprint therefore means the same context and the same request, so the stored report is reused
without asking the engine again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence

from pipeline.ops.reports.context import GraphData
from pipeline.ops.reports.models import ContextClaim, ContextEntity, ContextRelationship
from pipeline.ops.reports.parent_context import CONTEXT_VERSION

FINGERPRINT_VERSION = "report-fingerprint-v1"


class RowDigests:
    """sha256 of each entity / relationship / claim row, computed once per run and shared by levels."""

    def __init__(self, graph: GraphData) -> None:
        self.graph = graph
        self._cache: dict[tuple[str, str], str] = {}

    def _digest(self, item: ContextEntity | ContextRelationship | ContextClaim) -> str:
        key = (type(item).__name__, item.id)
        if key not in self._cache:
            # `model_dump` keeps field order; ids inside make two equal-looking rows distinct.
            payload = json.dumps([key[0], item.model_dump()], sort_keys=True, ensure_ascii=False)
            self._cache[key] = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        return self._cache[key]

    def rows(self, member_ids: Iterable[str], relationship_ids: Iterable[str]) -> list[str]:
        g = self.graph
        out = []
        for i in member_ids:
            if i in g.entities:
                out.append(self._digest(g.entities[i]))
                out.extend(self._digest(c) for c in g.claims_of.get(i, []))
            else:
                out.append(f"missing-entity:{i}")  # a dangling id still changes the fingerprint
        for r in relationship_ids:
            out.append(self._digest(g.relationships[r]) if r in g.relationships else f"missing-edge:{r}")
        return sorted(out)


def request_version(
    version: str, *, from_children: bool, budget: int, parent_budget: int | None
) -> tuple[str, int]:
    """(prompt version, budget) that enter a report's fingerprint: a parent written from its children's
    reports (`parent_context.py`) reads another context, under `parent_budget`. `build.py` and an
    import (`pipeline.interop.ms_graphrag_reports`) both ask here, so an imported report keeps being
    reused when the rule changes."""
    if from_children:
        return f"{version}+{CONTEXT_VERSION}", budget if parent_budget is None else parent_budget
    return version, budget


def report_fingerprint(
    rows: Sequence[str],
    children: Sequence[tuple[str, bool]],
    *,
    model: str,
    prompt_version: str,
    budget: int,
    max_words: int,
) -> str:
    """`rows` from `RowDigests.rows`; `children` as (child fingerprint, child has a report)."""
    h = hashlib.sha256()
    header = {
        "v": FINGERPRINT_VERSION,
        "model": model,
        "prompt": prompt_version,
        "budget": budget,
        "max_words": max_words,
        "children": sorted([fp, ok] for fp, ok in children),
    }
    h.update(json.dumps(header, sort_keys=True).encode("utf-8"))
    for digest in rows:
        h.update(digest.encode("ascii"))
    return h.hexdigest()
