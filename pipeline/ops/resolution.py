"""Entity resolution: raw per-unit records -> the `entities` and `relationships` tables.

Rules, in order:
1. Mentions share an entity key when their normalised names are equal (pipeline.core.names: case, accents,
   punctuation, whitespace, possessives and a leading article are ignored).
2. The forms of one person's name share a key (`pipeline.ops.canonical`): 'Mr. Scrooge' and 'Scrooge'
   become 'Ebenezer Scrooge' when that is the only long form; each merge is logged and counted.
3. Types are never merged: the same key with two types gives two rows (GraphRAG keeps the first and
   drops the other). Offline types are votes, not judgements: within one document a key takes the type
   most of its typed offline mentions there have (3a). The other exception is GENERIC_TYPE, which means "type unknown": such mentions
   join the typed entity of the same key with the most mentions (ties: type name order); a key that
   is never typed stays GENERIC_TYPE.
4. Common words (only with `offline_drop_common_words`): an untyped one-word name from the offline rules
   that the corpus writes in lower case at least as often ('Hope', 'Want') is dropped, with its
   relationships (counted, not unresolved). Off by default: on MuSiQue such names ('Census', 'West')
   are what questions ask about, and dropping them cost local search 1.4 points of R@10.
5. Fuzzy merge within a type: keys whose rapidfuzz `ratio` >= `resolution_fuzzy_threshold` merge into
   the key with more mentions, compared only within the same first letter, both at least 5 characters,
   and only when their numbers/Roman numerals and honorifics are identical ('World War I' never meets
   'World War II', 'Mr Smith' never meets 'Mrs Smith'). 100 turns fuzzy merging off.
6. The entity's title is its most frequent surface form (of the canonical key's own mentions, when forms
   merged); every other surface form is an alias.
   id = sha256(canonical key, type), so a re-run gives the same ids.
7. Relationships are undirected: all mentions of a pair of entities become one row (id from the sorted
   endpoint ids); the first-seen orientation names source and target. A pair that resolution turns
   into a self-loop is dropped and counted. weight = sum of LLM strengths, or for offline co-occurrence
   the number of distinct sentences (overlapping text units do not count a sentence twice).
8. Offline co-occurrence edges get a sentence-level NPMI; an edge below `offline_min_npmi` is pruned
   unless its weight reaches `offline_keep_weight` (frequent pairs always stay). Entities are never
   pruned: an entity left without edges gets a community by the isolates rule (pipeline.ops.communities).
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from rapidfuzz import fuzz, process

from pipeline.core import schema, tables
from pipeline.core.names import entity_id, normalize_name
from pipeline.engine.base import Engine
from pipeline.ops.canonical import canonical_keys, majority_type
from pipeline.ops.descriptions import (
    DescriptionItem,
    DescriptionOptions,
    SummaryReuse,
    SummaryStats,
    distinct,
    summarize_all,
)
from pipeline.ops.extraction.lexicon import HONORIFICS
from pipeline.ops.extraction.models import GENERIC_TYPE, UnitExtraction
from pipeline.ops.relationships import merge_relationships, prune_relationships
from pipeline.settings.bound import FromSettings, nested, setting

log = logging.getLogger(__name__)
_MARKERS = re.compile(r"\b(?:\d+|[ivxlc]+)\b")
_FUZZY_MIN_LEN = 5


@dataclass
class ResolutionStats:
    entity_mentions: int = 0
    entities: int = 0
    keys_with_several_types: int = 0
    generic_mentions_typed: int = 0
    fuzzy_merges: int = 0
    canonical_merges: list[str] = field(default_factory=list)  # 'key -> into (rule)', one per merged key
    common_words_dropped: int = 0
    relationships_to_common_words: int = 0
    inferred_entities: int = 0
    relationship_mentions: int = 0
    relationships: int = 0
    self_loops_dropped: int = 0
    unresolved_endpoints: int = 0
    pruned_edges: int = 0
    summaries: SummaryStats = field(default_factory=SummaryStats)


@dataclass
class ResolvedGraph:
    entities: pa.Table
    relationships: pa.Table
    stats: ResolutionStats


@dataclass
class _Mention:
    unit: str
    document: str
    key: str
    type: str
    name: str
    description: str
    evidence: list[int]
    inferred: bool
    surface_key: str = ""  # the key of the name as written, before canonicalisation
    offline: bool = False  # found by the offline rules (which leave a name untyped when unsure)


@dataclass(frozen=True)
class ResolutionOptions(FromSettings):
    """The thresholds of the rules above, and how merged descriptions are written."""

    # rapidfuzz ratio to merge same-type names (100: exact names only)
    fuzzy_threshold: float = setting("resolution_fuzzy_threshold")
    min_npmi: float = setting("offline_min_npmi")  # offline edges below this NPMI are pruned...
    keep_weight: float = setting("offline_keep_weight")  # ...unless seen in at least this many sentences
    drop_common_words: bool = setting("offline_drop_common_words")  # rule 4 (off by default)
    descriptions: DescriptionOptions = nested(DescriptionOptions)


def resolve_graph(
    units: Sequence[UnitExtraction],
    options: ResolutionOptions,
    engine: Engine,
    lowercase: Mapping[str, int] | None = None,
    reuse: SummaryReuse | None = None,
) -> ResolvedGraph:
    """The `entities` and `relationships` tables of the units, by the rules in the module docstring; the
    engine writes the descriptions (`pipeline.ops.descriptions`; `reuse`: the previous run's, where the
    engine's are reusable). `lowercase` counts the corpus's lower-case words (`lowercase_words`), for the
    common-word rule."""
    stats = ResolutionStats()
    mentions = _mentions(units, stats)
    common: set[str] = set()
    if lowercase is not None and options.drop_common_words:
        mentions, common = _drop_common_words(mentions, lowercase, stats)
    groups = _group(mentions, options.fuzzy_threshold, stats)

    # (unit, key) -> entity id, for relationship endpoints
    index: dict[tuple[str, str], str] = {}
    ent_rows: list[dict[str, Any]] = []
    evidence_by_entity: dict[str, set[tuple[str, int]]] = {}
    for (canonical, etype), members in groups.items():
        eid = entity_id(canonical, etype)
        surfaces = Counter(m.name for m in members)
        # the title is written as the canonical key's own form ('Ebenezer Scrooge', not 'Scrooge')
        own = Counter(m.name for m in members if m.surface_key == canonical) or surfaces
        title = min(own, key=lambda s: (-own[s], s))
        units_ = sorted({m.unit for m in members})
        for m in members:
            index.setdefault((m.unit, m.surface_key), eid)  # relationships name the form as written
        evidence_by_entity[eid] = {(m.document, p) for m in members for p in m.evidence}
        stats.inferred_entities += all(m.inferred for m in members)
        ent_rows.append(
            {
                "id": eid,
                "title": title,
                "type": etype,
                "descriptions": distinct([m.description for m in members]),
                "text_unit_ids": units_,
                "frequency": len(units_),
                "aliases": sorted(set(surfaces) - {title}),
                "document_ids": sorted({m.document for m in members}),
                "name_key": canonical,
            }
        )
    rel_rows = merge_relationships(units, index, stats, common)
    total_sentences = sum(u.n_sentences for u in units if u.method == "offline")
    rel_rows = prune_relationships(rel_rows, evidence_by_entity, total_sentences, options, stats)

    degree: Counter[str] = Counter()
    for r in rel_rows:
        degree[r["source_id"]] += 1
        degree[r["target_id"]] += 1
    titles = {e["id"]: e["title"] for e in ent_rows}
    items = [DescriptionItem((e["title"],), e["descriptions"]) for e in ent_rows]
    items += [
        DescriptionItem((titles[r["source_id"]], titles[r["target_id"]]), r["descriptions"]) for r in rel_rows
    ]
    summaries, stats.summaries = summarize_all(items, options.descriptions, engine, reuse)
    for row, summary in zip([*ent_rows, *rel_rows], summaries, strict=True):
        row["description"] = summary
        del row["descriptions"]

    ent_rows.sort(key=lambda e: (e["title"].casefold(), e["type"], e["id"]))
    for i, e in enumerate(ent_rows):
        e["human_readable_id"] = i
        e["degree"] = degree[e["id"]]
    for r in rel_rows:
        r["source"], r["target"] = titles[r["source_id"]], titles[r["target_id"]]
        r["combined_degree"] = degree[r["source_id"]] + degree[r["target_id"]]
    rel_rows.sort(key=lambda r: (r["source"].casefold(), r["target"].casefold(), r["id"]))
    for i, r in enumerate(rel_rows):
        r["human_readable_id"] = i
    stats.entities, stats.relationships = len(ent_rows), len(rel_rows)
    return ResolvedGraph(
        tables.to_table(ent_rows, schema.ENTITIES_SCHEMA),
        tables.to_table(rel_rows, schema.RELATIONSHIPS_SCHEMA),
        stats,
    )


def _mentions(units: Sequence[UnitExtraction], stats: ResolutionStats) -> list[_Mention]:
    out = []
    for u in units:
        for e in u.entities:
            key = normalize_name(e.name)
            if not key:
                continue
            etype = (e.type or GENERIC_TYPE).strip().lower() or GENERIC_TYPE
            out.append(
                _Mention(
                    u.text_unit_id,
                    u.document_id,
                    key,
                    etype,
                    e.name.strip(),
                    e.description,
                    list(e.evidence or []),
                    bool(e.inferred),
                    offline=u.method == "offline",
                )
            )
    stats.entity_mentions = len(out)
    # rule 2: the forms of one person's name become one key
    merges = canonical_keys((m.key, m.type) for m in out)
    into = {mg.key: mg.into for mg in merges}
    for m in out:
        m.surface_key = m.key
        m.key = into.get(m.key, m.key)
    stats.canonical_merges = [str(mg) for mg in merges]
    for mg in merges:
        log.info("entity names merged: %s", mg)
    # rule 3a: an offline type is a vote of one unit's mentions: within a document, a key keeps the type
    # most of its typed offline mentions there have (a character mis-tagged in one chapter stays one entity)
    votes: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for m in out:
        if m.offline and m.type != GENERIC_TYPE:
            votes[(m.document, m.key)][m.type] += 1
    for m in out:
        if m.offline and (m.document, m.key) in votes:
            m.type = majority_type(votes[(m.document, m.key)])
    # rule 3: an unknown type joins the most-mentioned typed entity of the same key
    typed: dict[str, Counter[str]] = defaultdict(Counter)
    for m in out:
        if m.type != GENERIC_TYPE:
            typed[m.key][m.type] += 1
    stats.keys_with_several_types = sum(1 for c in typed.values() if len(c) > 1)
    for m in out:
        if m.type == GENERIC_TYPE and m.key in typed:
            m.type = majority_type(typed[m.key])
            stats.generic_mentions_typed += 1
    return out


_LOWER_WORD = re.compile(r"\b[a-z][a-z]+\b")


def lowercase_words(texts: Iterable[str]) -> Counter[str]:
    """How often each word is written in lower case in the texts."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_LOWER_WORD.findall(text))
    return counts


def _drop_common_words(
    mentions: list[_Mention], lowercase: Mapping[str, int], stats: ResolutionStats
) -> tuple[list[_Mention], set[str]]:
    """Rule 4 (the kept mentions, the dropped keys): an untyped one-word name from the offline rules that the corpus writes in lower case at
    least as often as the name has mentions is a common word capitalised for emphasis ('Hope', 'Want',
    'Spirit'), not an entity."""
    counts = Counter(m.key for m in mentions)
    typed = {m.key for m in mentions if m.type != GENERIC_TYPE or not m.offline}
    common = {
        key for key, n in counts.items() if " " not in key and key not in typed and lowercase.get(key, 0) >= n
    }
    stats.common_words_dropped = len(common)
    return [m for m in mentions if m.key not in common], common


def _group(
    mentions: list[_Mention], threshold: float, stats: ResolutionStats
) -> dict[tuple[str, str], list[_Mention]]:
    """(canonical key, type) -> mentions, exact groups merged by the fuzzy rule."""
    exact: dict[tuple[str, str], list[_Mention]] = defaultdict(list)
    for m in mentions:
        exact[(m.key, m.type)].append(m)
    if threshold >= 100:
        return dict(exact)
    merged: dict[tuple[str, str], list[_Mention]] = {}
    # per (type, first letter): most-mentioned keys first, so they become the canonical ones
    blocks: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, etype in sorted(exact, key=lambda kt: (-len(exact[kt]), kt[0], kt[1])):
        blocks[(etype, key[0])].append(key)
    for (etype, _), keys in blocks.items():
        canon: list[str] = []
        for key in keys:
            target = _fuzzy_match(key, canon, threshold) if len(key) >= _FUZZY_MIN_LEN else None
            if target is None:
                canon.append(key)
                merged[(key, etype)] = list(exact[(key, etype)])
            else:
                merged[(target, etype)].extend(exact[(key, etype)])
                stats.fuzzy_merges += 1
    return merged


def _fuzzy_match(key: str, canon: list[str], threshold: float) -> str | None:
    for candidate, _score, _ in process.extract(
        key, canon, scorer=fuzz.ratio, score_cutoff=threshold, limit=5
    ):
        if len(candidate) >= _FUZZY_MIN_LEN and _markers(candidate) == _markers(key):
            return candidate
    return None


def _markers(key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Tokens that tell near-identical names apart: numbers, Roman numerals, honorifics."""
    words = key.split()
    return tuple(_MARKERS.findall(key)), tuple(w for w in words if w in HONORIFICS)


def link_text_units(
    text_units: pa.Table, column: str, rows: pa.Table, unit_column: str = "text_unit_ids"
) -> pa.Table:
    """text_units with `column` (entity_ids / relationship_ids / covariate_ids) filled by reverse map."""
    by_unit: dict[str, list[str]] = defaultdict(list)
    ids = rows.column("id").to_pylist()
    for rid, units in zip(ids, rows.column(unit_column).to_pylist(), strict=True):
        for unit in [units] if isinstance(units, str) else units or []:
            by_unit[unit].append(rid)
    values = [sorted(by_unit.get(u, [])) for u in text_units.column("id").to_pylist()]
    idx = text_units.schema.get_field_index(column)
    return text_units.set_column(idx, column, pa.array(values, type=pa.list_(pa.string())))
