"""The graph tables local search reads, loaded once per process and namespace and reloaded when one of
them is rewritten (`index_cache`).

Rows are kept whole (entities, relationships, claims, text units): the answer's context quotes their
descriptions and cites their `human_readable_id`s."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.core.stored_regions import mask_stored
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.retrieval.entity_match import NameLookup

PARQUET_INPUTS = (
    schema.ENTITIES,
    schema.RELATIONSHIPS,
    schema.COMMUNITIES,
    schema.COVARIATES,
    schema.TEXT_UNITS,
    schema.DOCUMENTS,
    schema.COMMUNITY_REPORTS,
)


@dataclass
class LocalIndex:
    store: NamespaceStore
    entities: dict[str, dict[str, Any]]  # id -> row
    neighbours: dict[str, dict[str, float]]  # entity id -> {neighbour id: summed weight}
    communities: dict[int, dict[str, Any]]  # community -> row
    leaf_of: dict[str, int]  # entity id -> its deepest community
    claims_by_entity: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    text_units: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # id -> {document_id, start, end, text}
    document_titles: dict[str, str] = field(default_factory=dict)
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)  # community -> {title, summary}
    relationships: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> row
    relationships_of: dict[str, list[str]] = field(default_factory=dict)  # entity id -> relationship ids
    names: NameLookup | None = None  # entity ids by name and alias, for the question's exact matches
    # relationship id -> its place by weight, then combined degree (both descending), then id: the
    # context's order within a tier, ranked once per load instead of once per question
    relationship_order: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.relationship_order = relationship_order(self.relationships)

    @property
    def levels(self) -> list[int]:
        return sorted({c["level"] for c in self.communities.values()})

    def lift(self, community: int, level: int | None) -> int:
        """The ancestor of `community` at `level` (itself when it is at or above that level)."""
        if level is None:
            return community
        current = self.communities.get(community)
        while current is not None and current["level"] > level and current["parent"] not in (-1, None):
            current = self.communities.get(current["parent"])
        return current["community"] if current is not None else community

    def members(self, community: int) -> set[str]:
        row = self.communities.get(community)
        return set(row["entity_ids"] or []) if row else set()


def load_local_index(store: NamespaceStore) -> LocalIndex:
    """This namespace's graph tables, read again only when one of them changed."""
    versions = table_versions(store, PARQUET_INPUTS)
    return cached_index(store, "local", versions, lambda: build_local_index(store))


def build_local_index(store: NamespaceStore) -> LocalIndex:
    try:
        entities = {e["id"]: e for e in store.read_table(schema.ENTITIES).to_pylist()}
        relationships = store.read_table(schema.RELATIONSHIPS).to_pylist()
        communities = {c["community"]: c for c in store.read_table(schema.COMMUNITIES).to_pylist()}
    except TableNotFoundError as exc:
        raise TableNotFoundError(
            f"{exc} (local search needs the graph: entities, relationships, communities)"
        ) from None
    neighbours: dict[str, dict[str, float]] = defaultdict(dict)
    rel_rows: dict[str, dict[str, Any]] = {}
    rel_of: dict[str, list[str]] = defaultdict(list)
    for r in relationships:
        s, t, w = r["source_id"], r["target_id"], float(r["weight"] or 0.0)
        neighbours[s][t] = neighbours[s].get(t, 0.0) + w
        neighbours[t][s] = neighbours[t].get(s, 0.0) + w
        key = r.get("id") or f"{s}->{t}"
        rel_rows[key] = r
        rel_of[s].append(key)
        if t != s:
            rel_of[t].append(key)
    leaf_of: dict[str, int] = {}
    depth: dict[str, int] = {}
    for c in communities.values():
        for eid in c["entity_ids"] or []:
            if c["level"] >= depth.get(eid, -1):
                depth[eid], leaf_of[eid] = c["level"], c["community"]
    claims: dict[str, list[dict[str, Any]]] = defaultdict(list)
    if store.has_table(schema.COVARIATES):
        for row in store.read_table(schema.COVARIATES).to_pylist():
            for key in ("subject_entity_id", "object_entity_id"):
                if row.get(key):
                    claims[row[key]].append(row)
    units: dict[str, dict[str, Any]] = {}
    if store.has_table(schema.TEXT_UNITS):
        t = store.read_table(
            schema.TEXT_UNITS,
            columns=["id", "human_readable_id", "document_id", "start_char", "end_char", "text"],
        )
        if store.has_table(schema.DOCUMENTS):  # front matter never becomes evidence; offsets unchanged
            t = mask_stored(t, lambda: store.read_table(schema.DOCUMENTS, columns=["id", "text"]))
        units = {r["id"]: r for r in t.to_pylist()}
    titles: dict[str, str] = {}
    if store.has_table(schema.DOCUMENTS):
        d = store.read_table(schema.DOCUMENTS, columns=["id", "title"])
        titles = dict(zip(d.column("id").to_pylist(), d.column("title").to_pylist(), strict=True))
    reports: dict[int, dict[str, Any]] = {}
    if store.has_table(schema.COMMUNITY_REPORTS):
        r = store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "title", "summary", "rank"])
        reports = {row["community"]: row for row in r.to_pylist()}
    return LocalIndex(
        store,
        entities,
        dict(neighbours),
        communities,
        leaf_of,
        dict(claims),
        units,
        titles,
        reports,
        rel_rows,
        dict(rel_of),
        NameLookup.build(entities),
    )


def relationship_order(relationships: dict[str, dict[str, Any]]) -> dict[str, int]:
    """id -> rank by weight, then combined degree (both descending), then id."""

    def key(rid: str) -> tuple:
        r = relationships[rid]
        return (-float(r.get("weight") or 0.0), -(r.get("combined_degree") or 0), rid)

    return {rid: i for i, rid in enumerate(sorted(relationships, key=key))}
