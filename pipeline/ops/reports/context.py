"""A community's report context within a token budget (GraphRAG: 8,000 tokens).

The context is three tables, as in GraphRAG: the member entities, the claims about them and the
relationships inside the community, rendered as `|`-separated rows under `-----Entities-----` style
headers (plus a table of sub-community reports when they stand in for raw rows). Each row starts
with a short id, 1, 2, ... per table in the order shown, that the report cites as
`[Data: Entities (3)]` (`citations.py`); ids are local to the context so that they do not change
when unrelated parts of the graph do.

- When the whole raw context fits the budget, all of it is used.
- Otherwise, when the community has children with reports, those reports are substituted for the
  children's raw rows, largest child first, one at a time, until the reports plus the rest of the raw
  context fit. If the reports alone exceed the budget, they are kept largest first while they fit.
  "The rest" is the members of children not substituted, their claims, and every relationship not
  internal to a substituted child (edges between children belong to no child's report).
- What remains is filled greedily: relationships by combined degree (then weight), each with its
  endpoint entities and up to `CLAIMS_PER_ENTITY` of their claims; then entities without a chosen
  relationship, by degree; then the remaining claims. An item that does not fit is skipped so that a
  smaller one further down can still go in.

GraphRAG adds entities only through relationships, so a community without inner edges got an empty
context; here every member can be chosen.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
from pydantic import BaseModel

from pipeline.core.tokens import count_tokens, get_encoding
from pipeline.ops.claims import known
from pipeline.ops.reports.citations import strip_citations
from pipeline.ops.reports.models import (
    ContextClaim,
    ContextEntity,
    ContextRelationship,
    ReportContext,
    SubReport,
)

REPORTS_HEADER = "-----Sub-community reports-----\nid|title|report"
BRIEF_REPORTS_HEADER = "-----Sub-community reports-----\nid|title|rating|summary|findings"
ENTITIES_HEADER = "-----Entities-----\nid|entity|type|description|degree"
CLAIMS_HEADER = "-----Claims-----\nid|entity|object|type|status|start_date|end_date|description"
RELATIONSHIPS_HEADER = "-----Relationships-----\nid|source|target|description|weight|combined_degree"
# Rows are costed before they are numbered: with a 3-digit id, at least as many tokens as any id takes
# below 1,000 rows (the exact count of the rendered text has the last word, see `_finish`).
_ID_ESTIMATE = 999
M = TypeVar("M", bound=BaseModel)
CLAIMS_PER_ENTITY = 3  # with its entity; the rest wait for the last pass so edges are not crowded out
TOP_ENTITIES = 5


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split()).replace("|", "/")


def entity_line(e: ContextEntity) -> str:
    return "|".join(_cell(v) for v in (e.title, e.type, e.description, e.degree))


def claim_line(c: ContextClaim) -> str:
    return "|".join(
        _cell(v) for v in (c.subject, c.object, c.type, c.status, c.start_date, c.end_date, c.description)
    )


def relationship_line(r: ContextRelationship) -> str:
    return "|".join(_cell(v) for v in (r.source, r.target, r.description, r.weight, r.combined_degree))


def report_line(s: SubReport) -> str:
    return f"{_cell(s.title)}|{_cell(strip_citations(s.full_content))}"


# A child's summary as a parent built from its children reads it (`parent_context.py`): real summaries
# run 100 to 250 tokens; a longer one is cut so that one verbose child cannot crowd its siblings out.
CHILD_SUMMARY_TOKENS = 200


def brief_report_line(s: SubReport, encoding: str) -> str:
    """A child's report as its parent reads it: title, rating, summary (cut) and findings' headlines."""
    enc = get_encoding(encoding)
    ids = enc.encode(strip_citations(s.summary), disallowed_special=())
    summary = enc.decode(ids[:CHILD_SUMMARY_TOKENS]) + (" ..." if len(ids) > CHILD_SUMMARY_TOKENS else "")
    headlines = "; ".join(strip_citations(f.summary) for f in s.findings)
    return "|".join(_cell(v) for v in (s.title, s.rank, summary, headlines))


def numbered(i: int, line: str) -> str:
    """A context row with its short id."""
    return f"{i}|{line}"


_EMPTY: dict[Any, object] = {str: "", int: 0, float: 0.0}


def _filled(model: type[M], table: pa.Table) -> list[M]:
    """The table's rows as `model`s (one column per field), a null cell read as its field's empty value."""
    empty = {name: _EMPTY[f.annotation] for name, f in model.model_fields.items()}
    rows = table.select(list(empty)).to_pylist()
    return [model(**{k: empty[k] if v is None else v for k, v in r.items()}) for r in rows]


class GraphData:
    """The namespace's entities, relationships and claims as context rows, with token counts cached."""

    def __init__(
        self, entities: pa.Table, relationships: pa.Table, covariates: pa.Table | None, encoding: str
    ):
        self.encoding = encoding
        self.entities: dict[str, ContextEntity] = {e.id: e for e in _filled(ContextEntity, entities)}
        self.relationships: dict[str, ContextRelationship] = {
            r.id: r for r in _filled(ContextRelationship, relationships)
        }
        self.claims_of: dict[str, list[ContextClaim]] = defaultdict(list)
        if covariates is not None and covariates.num_rows:
            cols = ["id", "subject_id", "object_id", "type", "status", "start_date", "end_date"]
            for r in covariates.select([*cols, "description", "subject_entity_id"]).to_pylist():
                if r["subject_entity_id"] in self.entities:
                    self.claims_of[r["subject_entity_id"]].append(
                        ContextClaim(
                            id=r["id"],
                            subject=r["subject_id"] or "",
                            object=known(r["object_id"]),  # "NONE" or null: the same context row
                            type=r["type"] or "",
                            status=r["status"] or "",
                            start_date=known(r["start_date"]),
                            end_date=known(r["end_date"]),
                            description=r["description"] or "",
                        )
                    )
        for claims in self.claims_of.values():
            claims.sort(key=lambda c: c.id)
        self._tokens: dict[tuple[str, str], int] = {}
        self.header_tokens = sum(
            self.count(h) for h in (ENTITIES_HEADER, CLAIMS_HEADER, RELATIONSHIPS_HEADER)
        )
        self.reports_header_tokens = self.count(REPORTS_HEADER)

    def count(self, text: str) -> int:
        return count_tokens(text + "\n", self.encoding)

    def count_row(self, line: str) -> int:
        return self.count(numbered(_ID_ESTIMATE, line))

    def tokens(self, item: ContextEntity | ContextRelationship | ContextClaim) -> int:
        key = (type(item).__name__, item.id)
        if key not in self._tokens:
            if isinstance(item, ContextEntity):
                line = entity_line(item)
            elif isinstance(item, ContextClaim):
                line = claim_line(item)
            else:
                line = relationship_line(item)
            self._tokens[key] = self.count_row(line)
        return self._tokens[key]


@dataclass
class ChildInfo:
    """A child community with a report, and what its report covers."""

    report: SubReport
    members: set[str]
    relationship_ids: set[str]


@dataclass
class _Pool:
    """Raw rows still eligible for the context."""

    entities: dict[str, ContextEntity]
    relationships: list[ContextRelationship]
    claims_of: dict[str, list[ContextClaim]] = field(default_factory=dict)

    def cost(self, graph: GraphData) -> int:
        return (
            sum(graph.tokens(e) for e in self.entities.values())
            + sum(graph.tokens(r) for r in self.relationships)
            + sum(graph.tokens(c) for cs in self.claims_of.values() for c in cs)
        )


def build_context(
    graph: GraphData,
    *,
    community: int,
    level: int,
    member_ids: Sequence[str],
    relationship_ids: Sequence[str],
    children: Sequence[ChildInfo],
    budget: int,
) -> ReportContext:
    """The community's context, following the rules in the module docstring."""
    members = [graph.entities[i] for i in member_ids if i in graph.entities]
    pool = _Pool(
        {e.id: e for e in members},
        [graph.relationships[r] for r in relationship_ids if r in graph.relationships],
        {e.id: graph.claims_of[e.id] for e in members if graph.claims_of.get(e.id)},
    )
    own = graph.header_tokens + pool.cost(graph)
    ranked = sorted(members, key=lambda e: (-e.degree, e.title, e.id))
    context = ReportContext(
        community=community,
        level=level,
        size=len(member_ids),
        top_entities=[e.title for e in ranked[:TOP_ENTITIES]],
        total_degree=sum(e.degree for e in members),
        own_tokens=own,
    )
    reports: list[ChildInfo] = []
    if own > budget and children:
        reports = _substitute(graph, pool, children, budget)
        covered = set().union(*(c.members for c in reports))
        covered_edges = set().union(*(c.relationship_ids for c in reports))
        pool = _Pool(
            {i: e for i, e in pool.entities.items() if i not in covered},
            [r for r in pool.relationships if r.id not in covered_edges],
            {i: cs for i, cs in pool.claims_of.items() if i not in covered},
        )
    context.sub_reports = [c.report for c in reports]
    room = budget - graph.header_tokens
    if reports:
        room -= graph.reports_header_tokens + sum(graph.count_row(report_line(c.report)) for c in reports)
    picked = _fill(graph, pool, room)
    _finish(graph, context, picked, budget)
    return context


def _substitute(graph: GraphData, pool: _Pool, children: Sequence[ChildInfo], budget: int) -> list[ChildInfo]:
    ordered = sorted(children, key=lambda c: (-c.report.size, c.report.community))
    room = budget - graph.header_tokens - graph.reports_header_tokens
    rest = pool.cost(graph)
    used: list[ChildInfo] = []
    report_cost = 0
    for child in ordered:
        used.append(child)
        report_cost += graph.count_row(report_line(child.report))
        # Children are disjoint, so their raw rows can be taken off the rest one child at a time.
        rest -= sum(graph.tokens(pool.entities[m]) for m in child.members if m in pool.entities)
        rest -= sum(graph.tokens(c) for m in child.members for c in pool.claims_of.get(m, []))
        rest -= sum(graph.tokens(r) for r in pool.relationships if r.id in child.relationship_ids)
        if report_cost + rest <= room:
            return used
    kept, cost = [], 0
    for child in used:
        t = graph.count_row(report_line(child.report))
        if cost + t <= room:
            kept.append(child)
            cost += t
    return kept


_Item = ContextEntity | ContextRelationship | ContextClaim


def _fill(graph: GraphData, pool: _Pool, room: int) -> list[_Item]:
    """Items in the order they were chosen (see the module docstring)."""
    picked: list[_Item] = []
    chosen: set[str] = set()
    used = 0

    def take(items: Iterable[_Item]) -> bool:
        nonlocal used
        items = [i for i in items if i.id not in chosen]
        cost = sum(graph.tokens(i) for i in items)
        if used + cost > room:
            return False
        picked.extend(items)
        chosen.update(i.id for i in items)
        used += cost
        return True

    def with_claims(entity: ContextEntity, limit: int | None) -> None:
        for claim in pool.claims_of.get(entity.id, [])[:limit]:
            take([claim])

    edges = sorted(pool.relationships, key=lambda r: (-r.combined_degree, -r.weight, r.id))
    for r in edges:
        ends = [pool.entities[i] for i in dict.fromkeys((r.source_id, r.target_id)) if i in pool.entities]
        fresh = [e for e in ends if e.id not in chosen]
        if take([*fresh, r]):
            for e in fresh:
                with_claims(e, CLAIMS_PER_ENTITY)
    by_degree = sorted(pool.entities.values(), key=lambda e: (-e.degree, e.title, e.id))
    for e in by_degree:
        if e.id not in chosen and take([e]):
            with_claims(e, CLAIMS_PER_ENTITY)
    for e in by_degree:
        if e.id in chosen:
            with_claims(e, None)
    return picked


def render(
    sub_reports: Sequence[SubReport],
    entities: Sequence[ContextEntity],
    claims: Sequence[ContextClaim],
    relationships: Sequence[ContextRelationship],
    brief_encoding: str | None = None,
) -> str:
    """The tables as the model reads them, each row numbered from 1 (its short id). `brief_encoding`:
    sub-reports as `brief_report_line`s (a parent built from its children)."""
    parts = []
    reports = (
        (BRIEF_REPORTS_HEADER, [brief_report_line(s, brief_encoding) for s in sub_reports])
        if brief_encoding
        else (REPORTS_HEADER, [report_line(s) for s in sub_reports])
    )
    for header, lines in (
        reports,
        (ENTITIES_HEADER, [entity_line(e) for e in entities]),
        (CLAIMS_HEADER, [claim_line(c) for c in claims]),
        (RELATIONSHIPS_HEADER, [relationship_line(r) for r in relationships]),
    ):
        if lines:
            parts.append("\n".join([header, *(numbered(i, line) for i, line in enumerate(lines, 1))]))
    return "\n\n".join(parts) + "\n"


def _finish(graph: GraphData, context: ReportContext, picked: list[_Item], budget: int) -> None:
    """Sort the chosen rows for reading, render, and make sure the exact count is within budget."""
    while True:
        entities = sorted(
            (i for i in picked if isinstance(i, ContextEntity)), key=lambda e: (-e.degree, e.title, e.id)
        )
        claims = [i for i in picked if isinstance(i, ContextClaim)]
        relationships = sorted(
            (i for i in picked if isinstance(i, ContextRelationship)),
            key=lambda r: (-r.combined_degree, -r.weight, r.id),
        )
        text = render(
            context.sub_reports,
            entities,
            claims,
            relationships,
            graph.encoding if context.brief else None,
        )
        tokens = count_tokens(text, graph.encoding)
        # Row counts are summed line by line; the joined text can differ by a few tokens.
        if tokens <= budget or not picked:
            break
        picked = picked[:-1]
    context.entities, context.claims, context.relationships = entities, claims, relationships
    context.text, context.tokens = text, tokens
