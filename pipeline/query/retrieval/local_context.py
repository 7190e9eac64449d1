"""The local answer's context: one mixed context within a token budget, as Microsoft GraphRAG builds it.

Five sections, in this order, each a table whose first column is a short id the answer cites:

    -----Reports-----          id|title|summary                    (id: the community number)
    -----Entities-----         id|entity|type|description|number of relationships
    -----Relationships-----    id|source|target|description|weight
    -----Claims-----           id|subject|object|type|status|description
    -----Sources-----          id|text                              (the text units' passages)

Ids are the tables' own `human_readable_id`s, so a citation names a row of the namespace's tables;
`LocalContext.rows` maps each back to its entity, relationship, claim or text unit (with the document
and character offsets).

The budget (`max_tokens`, default 12,000 as GraphRAG's) bounds the whole answer prompt, system text and
question included, counted with `pipeline.core.tokens` on the very messages `answer_messages` renders.
What is left after the prompt's own text is shared out as `ContextShares` says: sources 50% and
reports 15% are GraphRAG's `text_unit_prop` and `community_prop`; GraphRAG's remaining 35% (entities,
relationships, claims) is split 15/15/5, because the entities' and relationships' descriptions are what
answers a "how is X related to Y" question, and claims are few and overlap the sources they quote.

Rules: rows go in by rank (matched entities first, then the rest by their edge weight to the matched
ones and their degree; relationships touching matched entities first, by weight; sources in the
evidence ranking local search gives them). A row too large for what is left of its section's share is
skipped, not a stop: a later, shorter row may still fit. A section's unused share passes to the next
section, and what is left after the sources goes round the sections once more, so the context fills
the budget whenever there is material for it. Nothing is cut mid-row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

from pipeline import prompts
from pipeline.core.tokens import DEFAULT_ENCODING, count_tokens
from pipeline.query.answer.answer_context import LABELS, SECTIONS, ContextRow, LocalContext, Section
from pipeline.query.retrieval.local_index import LocalIndex

HEADERS: dict[Section, str] = {
    "reports": "id|title|summary",
    "entities": "id|entity|type|description|number of relationships",
    "relationships": "id|source|target|description|weight",
    "claims": "id|subject|object|type|status|description",
    "sources": "id|text",
}


@dataclass(frozen=True)
class ContextShares:
    """The share of the context budget each section may take before the unused rest passes on."""

    reports: float = 0.15
    entities: float = 0.15
    relationships: float = 0.15
    claims: float = 0.05
    sources: float = 0.50

    def __post_init__(self) -> None:
        values = [getattr(self, f.name) for f in fields(self)]
        if any(v < 0 for v in values) or sum(values) > 1.0 + 1e-9:
            raise ValueError(f"context shares must be >= 0 and sum to at most 1, got {values}")


# A section stops looking for a shorter row that still fits after this many rows in a row did not:
# what is left of its allowance is then crumbs, and counting the tokens of every remaining row (a
# generic entity brings thousands of relationships) cost 0.2 s a question on MuSiQue.
MAX_MISSES = 32


@dataclass
class _Candidate:
    section: Section
    id: int
    cells: list[str]
    text: str
    ref: dict[str, Any]
    rank: int  # position in its section's ranking
    evidence: dict[str, Any] | None = None  # the evidence item (sources, claims) it came from
    tokens: int = 0

    def line(self) -> str:
        return "|".join([str(self.id), *self.cells])


def _header_tokens(section: Section, encoding: str) -> int:
    return count_tokens(f"-----{LABELS[section]}-----\n{HEADERS[section]}\n\n", encoding)


def answer_messages(question: str, context_text: str) -> list[dict[str, str]]:
    """The answer prompt as sent: the context builder measures its budget on exactly this."""
    return prompts.LOCAL_ANSWER.messages(question=question, context=context_text or "(no data)")


def prompt_tokens(question: str, context_text: str, encoding: str) -> int:
    """Tokens of the answer prompt's text (system and user messages) with this context."""
    messages = answer_messages(question, context_text)
    return count_tokens("\n".join(m["content"] for m in messages), encoding)


def _cell(value: Any) -> str:
    # One row per line and one cell per column: line breaks and the column separator cannot survive.
    return " ".join(str(value if value is not None else "").replace("|", "/").split())


class _Ids:
    """Short ids unique within a section: the table's human_readable_id, or the next free one."""

    def __init__(self) -> None:
        self.used: set[int] = set()

    def take(self, hrid: Any) -> int:
        fresh = isinstance(hrid, int) and hrid not in self.used
        # Missing or repeated (a hand-built table): an id no other row of the section has.
        short = hrid if fresh else max(self.used, default=-1) + 1
        self.used.add(short)
        return short


def rank_entities(index: LocalIndex, seeds: list[str], communities: list[dict]) -> list[str]:
    """Matched entities in match order, then their neighbours and the chosen communities' members by
    edge weight to the matched ones, then degree."""
    known = [s for s in dict.fromkeys(seeds) if s in index.entities]
    seed_set = set(known)
    pool = {n for s in known for n in index.neighbours.get(s, {})}
    pool |= {m for c in communities for m in index.members(c["id"])}
    pool = {e for e in pool if e in index.entities and e not in seed_set}

    def key(e: str) -> tuple:
        weight = sum(index.neighbours.get(e, {}).get(s, 0.0) for s in known)
        row = index.entities[e]
        return (-weight, -(row.get("degree") or len(index.neighbours.get(e, {}))), row["title"], e)

    return known + sorted(pool, key=key)


def rank_relationships(index: LocalIndex, seeds: list[str], entities: list[str]) -> Iterator[str]:
    """Relationships between matched entities, then those touching one, then the others among the
    ranked entities; by weight within each (`LocalIndex.relationship_order`).

    Lazy: the context stops early, so the matched entities' relationships are binned and sorted
    first and the rest (the thousands a generic neighbour brings) only when the context reaches them;
    sorting them all with a tuple key was a fifth of a DRIFT question's time on MuSiQue."""
    entity_set = set(entities)
    matched = [e for e in dict.fromkeys(seeds) if e in entity_set]
    seed_set, order = set(matched), index.relationship_order
    touching = {r for e in matched for r in index.relationships_of.get(e, [])}
    tiers: list[list[str]] = [[] for _ in range(4)]  # (2 - ends matched) * 2 + (an end outside)
    for rid in touching:
        r = index.relationships[rid]
        source, target = r["source_id"], r["target_id"]
        ends = (source in seed_set) + (target in seed_set)
        tiers[2 * (2 - ends) + (source not in entity_set or target not in entity_set)].append(rid)
    for tier in tiers:
        yield from sorted(tier, key=order.__getitem__)
    inside, outside = [], []
    rest = {r for e in entities if e not in seed_set for r in index.relationships_of.get(e, [])}
    for rid in rest - touching:
        r = index.relationships[rid]
        (inside if r["source_id"] in entity_set and r["target_id"] in entity_set else outside).append(rid)
    yield from sorted(inside, key=order.__getitem__)
    yield from sorted(outside, key=order.__getitem__)


class _Rows:
    """A section's candidates, built as they are first iterated: the context fills each section in
    rank order and stops early, so the tail of a long ranking (thousands of relationships of a generic
    entity) is never turned into rows."""

    def __init__(self, rows: Iterator[_Candidate]) -> None:
        self._source = rows
        self._built: list[_Candidate] = []

    def __iter__(self) -> Iterator[_Candidate]:
        i = 0
        while True:
            if i == len(self._built):
                nxt = next(self._source, None)
                if nxt is None:
                    return
                self._built.append(nxt)
            yield self._built[i]
            i += 1


def _candidates(
    index: LocalIndex, seeds: list[str], communities: list[dict], chunks: list[dict]
) -> dict[Section, _Rows]:
    entities = rank_entities(index, seeds, communities)
    return {
        "reports": _Rows(_report_rows(communities)),
        "entities": _Rows(_entity_rows(index, entities)),
        "relationships": _Rows(_relationship_rows(index, seeds, entities)),
        "claims": _Rows(_claim_rows(index, entities)),
        "sources": _Rows(_source_rows(index, chunks)),
    }


def _report_rows(communities: list[dict]) -> Iterator[_Candidate]:
    for rank, c in enumerate(communities):
        summary = c.get("summary") or ""
        ref = {"community": c["id"], "title": c.get("title"), "level": c.get("level")}
        yield _Candidate("reports", int(c["id"]), [_cell(c.get("title")), _cell(summary)], summary, ref, rank)


def _entity_rows(index: LocalIndex, entities: list[str]) -> Iterator[_Candidate]:
    ids = _Ids()
    for rank, e in enumerate(entities):
        row = index.entities[e]
        degree = row.get("degree")
        degree = degree if degree is not None else len(index.neighbours.get(e, {}))
        cells = [_cell(row["title"]), _cell(row.get("type")), _cell(row.get("description")), str(degree)]
        ref = {"entity_id": e, "title": row["title"]}
        sid = ids.take(row.get("human_readable_id"))
        yield _Candidate("entities", sid, cells, row.get("description") or "", ref, rank)


def _relationship_rows(index: LocalIndex, seeds: list[str], entities: list[str]) -> Iterator[_Candidate]:
    ids = _Ids()
    for rank, rid in enumerate(rank_relationships(index, seeds, entities)):
        r = index.relationships[rid]
        source = r.get("source") or index.entities.get(r["source_id"], {}).get("title") or r["source_id"]
        target = r.get("target") or index.entities.get(r["target_id"], {}).get("title") or r["target_id"]
        weight = float(r.get("weight") or 0.0)
        cells = [_cell(source), _cell(target), _cell(r.get("description")), f"{weight:g}"]
        ref = {"relationship_id": r.get("id") or rid, "source": source, "target": target}
        sid = ids.take(r.get("human_readable_id"))
        yield _Candidate("relationships", sid, cells, r.get("description") or "", ref, rank)


def _claim_rows(index: LocalIndex, entities: list[str]) -> Iterator[_Candidate]:
    ids = _Ids()
    seen: set[str] = set()
    for e in entities:
        for claim in index.claims_by_entity.get(e, []):
            if claim["id"] in seen:
                continue
            seen.add(claim["id"])
            ev = claim_evidence(index, claim)
            cells = [
                _cell(
                    claim.get("subject_id")
                    or index.entities.get(claim.get("subject_entity_id") or "", {}).get("title")
                ),
                _cell(claim.get("object_id")),
                _cell(claim.get("type")),
                _cell(claim.get("status")),
                _cell(claim.get("description")),
            ]
            sid = ids.take(claim.get("human_readable_id"))
            ref = {"claim_id": claim["id"], **_span(ev)}
            yield _Candidate("claims", sid, cells, claim.get("description") or "", ref, len(seen) - 1, ev)


def _source_rows(index: LocalIndex, chunks: list[dict]) -> Iterator[_Candidate]:
    ids = _Ids()
    for rank, chunk in enumerate(chunks):
        unit = index.text_units.get(chunk["id"], {})
        sid = ids.take(unit.get("human_readable_id"))
        ref = {"text_unit_id": chunk["id"], **_span(chunk)}
        yield _Candidate("sources", sid, [_cell(chunk["text"])], chunk["text"], ref, rank, chunk)


def _span(ev: dict[str, Any]) -> dict[str, Any]:
    keys = ("document_id", "document_title", "start_char", "end_char")
    return {k: ev.get(k) for k in keys}


def claim_evidence(index: LocalIndex, claim: dict[str, Any]) -> dict[str, Any]:
    """A claim as an evidence item: its quote where it was found in the document, else its text unit."""
    unit = index.text_units.get(claim.get("text_unit_id") or "", {})
    has_span = claim.get("start_char") is not None and claim.get("end_char") is not None
    document_id = claim.get("document_id") or unit.get("document_id")
    return {
        "id": claim["id"],
        "kind": "claim",
        "text_unit_id": claim.get("text_unit_id"),  # the unit it was extracted from, as a chunk's own id
        "text": (claim.get("source_text") if has_span else None) or claim.get("description") or "",
        "description": claim.get("description"),
        "status": claim.get("status"),
        "document_id": document_id,
        "document_title": index.document_titles.get(document_id or ""),
        "start_char": claim["start_char"] if has_span else unit.get("start_char"),
        "end_char": claim["end_char"] if has_span else unit.get("end_char"),
        "score": None,
        "tied_to_community": True,
        "channel": "claim",
    }


def _render(chosen: dict[Section, list[_Candidate]]) -> str:
    blocks = []
    for section in SECTIONS:
        rows = sorted(chosen[section], key=lambda c: c.rank)
        if rows:
            lines = [f"-----{LABELS[section]}-----", HEADERS[section], *(c.line() for c in rows)]
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def build_local_context(
    index: LocalIndex,
    question: str,
    seeds: list[str],
    communities: list[dict[str, Any]],
    chunks: list[dict[str, Any]],
    *,
    max_tokens: int = 12_000,
    encoding: str = DEFAULT_ENCODING,
    shares: ContextShares = ContextShares(),
) -> tuple[LocalContext, list[dict[str, Any]]]:
    """The context of the answer to `question` and the evidence items (sources, claims) it holds.

    `seeds` are the matched entity ids, best first; `communities` the chosen community rows, best first;
    `chunks` the recalled text units as evidence items, in evidence order."""
    candidates = _candidates(index, seeds, communities, chunks)
    available = max_tokens - prompt_tokens(question, "", encoding)
    chosen: dict[Section, list[_Candidate]] = {s: [] for s in SECTIONS}
    order: list[_Candidate] = []  # in the order they went in, to take the last ones out if need be

    def fill(section: Section, allowance: float) -> float:
        spent, misses = 0.0, 0
        taken = {id(c) for c in chosen[section]}
        for c in candidates[section]:
            if id(c) in taken:
                continue
            if misses >= MAX_MISSES:
                break
            if not c.tokens:
                c.tokens = count_tokens(c.line() + "\n", encoding)
            header = 0 if chosen[section] else _header_tokens(section, encoding)
            if spent + c.tokens + header <= allowance:
                spent += c.tokens + header
                chosen[section].append(c)
                order.append(c)
                misses = 0
            else:
                misses += 1
        return spent

    carry, spent = 0.0, 0.0
    for section in SECTIONS:
        allowance = getattr(shares, section) * available + carry
        used = fill(section, allowance)
        carry, spent = allowance - used, spent + used
    for section in SECTIONS:
        if available - spent > 0:
            spent += fill(section, available - spent)
    text = _render(chosen)
    total = prompt_tokens(question, text, encoding)
    while total > max_tokens and order:  # row-by-row counts can be off by a token or two from the whole
        last = order.pop()
        chosen[last.section].remove(last)
        text = _render(chosen)
        total = prompt_tokens(question, text, encoding)
    rows, evidence, section_tokens = [], [], {}
    for section in SECTIONS:
        ranked = sorted(chosen[section], key=lambda c: c.rank)
        if ranked:
            # Summed from the counts the budget already took (a token or two off the section rendered
            # alone): counting each section afresh re-encoded the whole prompt a second time.
            section_tokens[section] = _header_tokens(section, encoding) + sum(c.tokens for c in ranked)
        for c in ranked:
            rows.append(ContextRow(section=section, id=c.id, text=c.text, ref=c.ref))
            if c.evidence is not None:
                evidence.append({**c.evidence, "short_id": c.id, "ref": f"{LABELS[section]} ({c.id})"})
    # Sources before claims in the evidence list, as before: passages are the primary evidence.
    evidence.sort(key=lambda ev: ev["kind"] == "claim")
    context = LocalContext(
        text=text, rows=rows, budget=max_tokens, prompt_tokens=total, section_tokens=section_tokens
    )
    return context, evidence
