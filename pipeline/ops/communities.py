"""Hierarchical Leiden communities over the whole entity graph -> the `communities` table.

- graspologic-native `hierarchical_leiden` runs on every edge of every connected component (GraphRAG
  keeps only the largest component by default, so the other entities get no community). Its call and
  defaults follow GraphRAG (modularity, randomness 0.001, one iteration), seeded.
- Nesting: a community larger than `max_cluster_size` is re-clustered one level down, and its
  children partition its members. A community that Leiden does not split (small enough, or one it
  cannot divide, such as a clique) is a leaf: its members do not appear at deeper levels. So an
  entity is in exactly one community at each level from 0 down to its leaf, and in none below.
- Isolates rule: entities without any edge are grouped at level 0 by their first document id, in
  title order, at most `max_cluster_size` per community (method "isolates"), so every entity has a
  community.
- Numbering: communities are numbered 0..n-1 by level, Leiden's before the isolates', in Leiden's
  order; ids hash (level, member entity ids), so the same input gives the same ids and numbers.
- relationship_ids are the edges with both ends inside; text_unit_ids are the member entities' text
  units (GraphRAG takes the edges' text units and so drops communities without an inner edge).
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

import graspologic_native as gn
import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.core.names import stable_id
from pipeline.settings import default_of


@dataclass
class _Cluster:
    key: tuple[int, int, int]  # (level, origin: 0 leiden / 1 isolates, order within origin)
    level: int
    members: set[str]
    parent: Any  # key of the parent cluster or None
    method: str


def build_communities(
    entities: pa.Table,
    relationships: pa.Table,
    *,
    max_cluster_size: int = default_of("max_cluster_size"),
    seed: int = default_of("leiden_seed"),
    resolution: float = 1.0,
    period: str | None = None,
) -> pa.Table:
    entity_rows = entities.select(["id", "title", "text_unit_ids", "document_ids"]).to_pylist()
    rels = relationships.select(["id", "source_id", "target_id", "weight"]).to_pylist()
    edges = sorted(
        {
            (min(r["source_id"], r["target_id"]), max(r["source_id"], r["target_id"]), float(r["weight"]))
            for r in rels
            if r["weight"] and r["weight"] > 0 and r["source_id"] != r["target_id"]
        }
    )
    clusters = _leiden(edges, max_cluster_size, seed, resolution) if edges else []
    clustered = {m for c in clusters for m in c.members}
    clusters += _isolates(entity_rows, clustered, max_cluster_size)

    clusters.sort(key=lambda c: c.key)
    number = {c.key: i for i, c in enumerate(clusters)}
    children: dict[Any, list[int]] = defaultdict(list)
    for c in clusters:
        if c.parent is not None:
            children[c.parent].append(number[c.key])
    # entity -> community number, per level
    at_level: dict[int, dict[str, int]] = defaultdict(dict)
    for c in clusters:
        for m in c.members:
            at_level[c.level][m] = number[c.key]
    inner: dict[int, list[str]] = defaultdict(list)
    for r in rels:
        for assignment in at_level.values():
            a, b = assignment.get(r["source_id"]), assignment.get(r["target_id"])
            if a is not None and a == b:
                inner[a].append(r["id"])
    units_of = {e["id"]: e["text_unit_ids"] or [] for e in entity_rows}
    period = period or dt.datetime.now(dt.UTC).date().isoformat()

    rows = []
    for c in clusters:
        n = number[c.key]
        members = sorted(c.members)
        rows.append(
            {
                "id": stable_id("community", str(c.level), *members),
                "human_readable_id": n,
                "community": n,
                "level": c.level,
                "parent": number[c.parent] if c.parent is not None else -1,
                "children": sorted(children.get(c.key, [])),
                "title": f"Community {n}",
                "entity_ids": members,
                "relationship_ids": sorted(inner.get(n, [])),
                "text_unit_ids": sorted({u for m in members for u in units_of.get(m, [])}),
                "period": period,
                "size": len(members),
                "method": c.method,
            }
        )
    return tables.to_table(rows, schema.COMMUNITIES_SCHEMA)


def _leiden(
    edges: list[tuple[str, str, float]], max_cluster_size: int, seed: int, resolution: float
) -> list[_Cluster]:
    result = gn.hierarchical_leiden(
        edges=edges,
        starting_communities=None,
        resolution=resolution,
        randomness=0.001,
        iterations=1,
        use_modularity=True,
        max_cluster_size=max_cluster_size,
        seed=seed,
    )
    members: dict[int, set[str]] = defaultdict(set)
    level: dict[int, int] = {}
    parent: dict[int, int | None] = {}
    for p in result:
        members[p.cluster].add(p.node)
        level[p.cluster] = p.level
        parent[p.cluster] = p.parent_cluster
    key = {cid: (level[cid], 0, cid) for cid in members}
    return [
        _Cluster(
            key[cid],
            level[cid],
            members[cid],
            key[parent[cid]] if parent[cid] is not None else None,
            "leiden",
        )
        for cid in members
    ]


def _isolates(
    entity_rows: list[dict[str, Any]], clustered: set[str], max_cluster_size: int
) -> list[_Cluster]:
    by_document: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entity_rows:
        if e["id"] not in clustered:
            by_document[(e["document_ids"] or [""])[0]].append(e)
    out = []
    for document in sorted(by_document):
        group = sorted(by_document[document], key=lambda e: (e["title"].casefold(), e["id"]))
        for start in range(0, len(group), max_cluster_size):
            chunk = group[start : start + max_cluster_size]
            out.append(_Cluster((0, 1, len(out)), 0, {e["id"] for e in chunk}, None, "isolates"))
    return out


# ---- checks and summaries ----------------------------------------------------------------------------
def check_communities(communities: pa.Table, entity_ids: set[str]) -> dict[str, int]:
    """Counts of every violation of the rules above; all zero for a sound table."""
    rows = communities.to_pylist()
    by_number = {r["community"]: r for r in rows}
    problems = defaultdict(int)
    seen_at_level: dict[int, dict[str, int]] = defaultdict(dict)
    for r in rows:
        if not r["entity_ids"]:
            problems["empty_communities"] += 1
        for m in r["entity_ids"]:
            if m in seen_at_level[r["level"]]:
                problems["entities_in_two_communities_at_a_level"] += 1
            seen_at_level[r["level"]][m] = r["community"]
        if r["parent"] == -1:
            if r["level"] != 0:
                problems["roots_below_level_0"] += 1
        else:
            parent = by_number.get(r["parent"])
            if (
                parent is None
                or parent["level"] != r["level"] - 1
                or r["community"] not in parent["children"]
            ):
                problems["broken_parent_links"] += 1
        if r["children"]:
            union: list[str] = []
            for child in r["children"]:
                union.extend(by_number[child]["entity_ids"] if child in by_number else [])
            if sorted(union) != sorted(r["entity_ids"]):
                problems["children_not_a_partition"] += 1
    problems["entities_without_community"] = len(entity_ids - set(seen_at_level.get(0, {})))
    problems["unknown_entities"] = len({m for lv in seen_at_level.values() for m in lv} - entity_ids)
    for key in (
        "empty_communities",
        "entities_in_two_communities_at_a_level",
        "roots_below_level_0",
        "broken_parent_links",
        "children_not_a_partition",
    ):
        problems.setdefault(key, 0)
    return dict(problems)


def level_summary(communities: pa.Table) -> dict[int, dict[str, float]]:
    """Per level: number of communities and their sizes (min / median / max)."""
    sizes: dict[int, list[int]] = defaultdict(list)
    for level, size in zip(
        communities.column("level").to_pylist(), communities.column("size").to_pylist(), strict=True
    ):
        sizes[level].append(size)
    return {
        level: {
            "communities": len(s),
            "entities": sum(s),
            "min_size": min(s),
            "median_size": statistics.median(s),
            "max_size": max(s),
        }
        for level, s in sorted(sizes.items())
    }


def size_histogram(communities: pa.Table) -> list[dict[str, int | str]]:
    """Per level, how many communities fall in each power-of-two size bucket (1, 2-3, 4-7, ...)."""
    counts: dict[int, Counter[int]] = defaultdict(Counter)
    for level, size in zip(
        communities.column("level").to_pylist(), communities.column("size").to_pylist(), strict=True
    ):
        counts[level][max(int(size), 1).bit_length() - 1] += 1
    top = max((b for c in counts.values() for b in c), default=0)
    labels = {b: str(1 << b) if b == 0 else f"{1 << b}-{(2 << b) - 1}" for b in range(top + 1)}
    return [{"level": lv, **{labels[b]: counts[lv][b] for b in range(top + 1)}} for lv in sorted(counts)]


def top_communities(rows: list[dict[str, Any]], level: int, limit: int | None = None) -> list[dict[str, Any]]:
    """A level's communities as `pipeline communities` lists them: highest report rank first (the rank
    weighs content, not size alone), then largest, then community id. Rows without a rank (no report
    yet) sort by size."""
    at_level = sorted(
        (r for r in rows if r["level"] == level),
        key=lambda r: (-(r.get("rank") or 0.0), -r["size"], r["community"]),
    )
    return at_level if limit is None else at_level[:limit]
