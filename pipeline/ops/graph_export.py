"""The graph for people and tools: a GraphML file (Gephi, Cytoscape) and summary numbers for metadata."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import BinaryIO

import networkx as nx
import pyarrow as pa

_DEGREE_BUCKETS = ((0, 0), (1, 1), (2, 2), (3, 5), (6, 10), (11, 20), (21, 50), (51, None))


def write_graphml(
    sink: BinaryIO | pa.NativeFile, entities: pa.Table, relationships: pa.Table, communities: pa.Table
) -> None:
    """Write the graph to `sink`, a binary stream (the store's, so that the file lands where the namespace's
    data lives and replaces the old one only when complete). Nodes are entities (title, type, description, degree, frequency, `community` = deepest community
    and `community_level_<k>` per level, -1 where absent); edges carry weight and description."""
    graph = nx.Graph()
    levels = sorted(set(communities.column("level").to_pylist()))
    membership: dict[str, dict[int, int]] = defaultdict(dict)
    for row in communities.select(["community", "level", "entity_ids"]).to_pylist():
        for eid in row["entity_ids"]:
            membership[eid][row["level"]] = row["community"]
    for e in entities.select(["id", "title", "type", "description", "degree", "frequency"]).to_pylist():
        at = membership.get(e["id"], {})
        attrs = {
            "label": e["title"],
            "type": e["type"],
            "description": e["description"] or "",
            "degree": int(e["degree"]),
            "frequency": int(e["frequency"]),
            "community": at[max(at)] if at else -1,
        }
        attrs.update({f"community_level_{lv}": at.get(lv, -1) for lv in levels})
        graph.add_node(e["id"], **attrs)
    for r in relationships.select(["id", "source_id", "target_id", "weight", "description"]).to_pylist():
        graph.add_edge(
            r["source_id"],
            r["target_id"],
            id=r["id"],
            weight=float(r["weight"]),
            description=r["description"] or "",
        )
    nx.write_graphml(graph, sink)


def degree_summary(entities: pa.Table) -> dict[str, object]:
    """Degree distribution: mean / median / p90 / max and counts per bucket ('3-5': n, '51+': n)."""
    degrees = sorted(entities.column("degree").to_pylist())
    if not degrees:
        return {"mean": 0, "median": 0, "p90": 0, "max": 0, "buckets": {}}
    buckets: Counter[str] = Counter()
    for d in degrees:
        for low, high in _DEGREE_BUCKETS:
            if d >= low and (high is None or d <= high):
                label = f"{low}+" if high is None else (str(low) if low == high else f"{low}-{high}")
                buckets[label] += 1
                break
    return {
        "mean": round(statistics.fmean(degrees), 3),
        "median": statistics.median(degrees),
        "p90": degrees[int(0.9 * (len(degrees) - 1))],
        "max": degrees[-1],
        "buckets": dict(buckets),
    }
