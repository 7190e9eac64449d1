"""A parent community's model-report context, written from its children's reports (issue 62).

GraphRAG substitutes sub-community reports for raw rows only once a community's raw rows pass the
budget, and then sends the rest of the raw rows too: a model-written parent report re-reads what its
children's reports already said, and on MuSiQue-100 that was most of the index's bill. Here a
community with reported children always reads:

- each reported child as one row: its title, its rating, its summary (cut to `context.CHILD_SUMMARY_TOKENS`)
  and its findings' headlines. The findings' explanations stay in the child's own report, which
  global search reads in its own right;
- then only what no child's context covered: the relationships between children, the members with no
  reported child (or that a child's trimmed context left out) and their claims, filled by the leaf
  rules (`context._fill`) in the room the children leave.

Every child goes in: when their lines do not all fit, each summary is cut to an equal share of the room
(headlines dropped); only past that do the largest go in first while they fit, and one left out gives
its rows back to the pool.
What a report's context covered (`Coverage`) is its own rows plus its children's coverage, so nothing
a leaf's context held is dropped on the way up (tests/test_reports_parents.py).

Leaves, and every report of the offline engine, keep `context.build_context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pipeline.core.tokens import get_encoding
from pipeline.ops.reports.context import (
    BRIEF_REPORTS_HEADER,
    ChildInfo,
    GraphData,
    _fill,
    _finish,
    _Item,
    _Pool,
    brief_report_line,
)
from pipeline.ops.reports.models import ReportContext

CONTEXT_VERSION = "parents-from-children-v1"  # enters a parent's fingerprint (see build.py)


@dataclass
class Coverage:
    """The rows a report's context held, itself or through its children's contexts."""

    entities: set[str] = field(default_factory=set)
    relationships: set[str] = field(default_factory=set)
    claims: set[str] = field(default_factory=set)

    def add_context(self, context: ReportContext) -> None:
        self.entities.update(e.id for e in context.entities)
        self.relationships.update(r.id for r in context.relationships)
        self.claims.update(c.id for c in context.claims)

    def merge(self, other: Coverage) -> None:
        self.entities |= other.entities
        self.relationships |= other.relationships
        self.claims |= other.claims


def build_parent_context(
    graph: GraphData,
    *,
    community: int,
    level: int,
    member_ids: Sequence[str],
    relationship_ids: Sequence[str],
    children: Sequence[tuple[ChildInfo, Coverage]],
    budget: int,
) -> ReportContext:
    """The context of a community with reported children, by the rules in the module docstring."""
    members = [graph.entities[i] for i in member_ids if i in graph.entities]
    ranked = sorted(members, key=lambda e: (-e.degree, e.title, e.id))
    edges = [graph.relationships[r] for r in relationship_ids if r in graph.relationships]
    claims_of = {e.id: graph.claims_of[e.id] for e in members if graph.claims_of.get(e.id)}
    own = graph.header_tokens + _Pool({e.id: e for e in members}, edges, claims_of).cost(graph)
    context = ReportContext(
        community=community,
        level=level,
        size=len(member_ids),
        top_entities=[e.title for e in ranked[:5]],
        total_degree=sum(e.degree for e in members),
        own_tokens=own,
        brief=True,
    )
    room = budget - graph.header_tokens - graph.count(BRIEF_REPORTS_HEADER)
    kept = _fit_children(graph, children, room)
    room -= sum(graph.count_row(brief_report_line(c.report, graph.encoding)) for c, _ in kept)
    covered = Coverage()
    for _, cover in kept:
        covered.merge(cover)
    pool = _Pool(
        {e.id: e for e in members if e.id not in covered.entities},
        [r for r in edges if r.id not in covered.relationships],
        {i: [c for c in cs if c.id not in covered.claims] for i, cs in claims_of.items()},
    )
    context.sub_reports = [c.report for c, _ in kept]
    picked = _fill(graph, pool, room)
    picked += _loose_claims(graph, pool, picked, room)
    _finish(graph, context, picked, budget)
    return context


def _fit_children(
    graph: GraphData, children: Sequence[tuple[ChildInfo, Coverage]], room: int
) -> list[tuple[ChildInfo, Coverage]]:
    """Every child when their lines fit; else each child's summary cut to an equal share of the room
    (its headlines dropped) so that none is left out; only past that, the largest first while they fit."""
    ordered = sorted(children, key=lambda c: (-c[0].report.size, c[0].report.community))

    def cost(items: list[tuple[ChildInfo, Coverage]]) -> int:
        return sum(graph.count_row(brief_report_line(c.report, graph.encoding)) for c, _ in items)

    if cost(ordered) <= room or not ordered:
        return ordered
    share = room // len(ordered)
    shortened = []
    for child, cover in ordered:
        title = graph.count_row(
            brief_report_line(child.report.model_copy(update={"summary": "", "findings": []}), graph.encoding)
        )
        words = _cut(child.report.summary, max(share - title - 2, 0), graph.encoding)
        report = child.report.model_copy(update={"summary": words, "findings": []})
        shortened.append((replace(child, report=report), cover))
    kept, used = [], 0
    for child, cover in shortened:
        t = graph.count_row(brief_report_line(child.report, graph.encoding))
        if used + t <= room:
            kept.append((child, cover))
            used += t
    return kept


def _cut(text: str, tokens: int, encoding: str) -> str:
    enc = get_encoding(encoding)
    ids = enc.encode(text, disallowed_special=())
    return text if len(ids) <= tokens else enc.decode(ids[:tokens]).rstrip() + " ..."


def _loose_claims(graph: GraphData, pool: _Pool, picked: list[_Item], room: int) -> list[_Item]:
    """Uncovered claims of members a child covers (its trimmed context left the claim out): `_fill`
    only adds claims with their entity's row, and that row is the child's."""
    used = sum(graph.tokens(i) for i in picked)
    chosen = {i.id for i in picked}
    out: list[_Item] = []
    for entity_id, claims in sorted(pool.claims_of.items()):
        if entity_id in pool.entities:
            continue
        for claim in claims:
            cost = graph.tokens(claim)
            if claim.id not in chosen and used + cost <= room:
                out.append(claim)
                used += cost
    return out
