"""The graph for people and tools: a GraphML file (Gephi, Cytoscape) and summary numbers for metadata."""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import BinaryIO
from xml.sax.saxutils import escape

import pyarrow as pa
from networkx.readwrite.graphml import GraphML

_DEGREE_BUCKETS = ((0, 0), (1, 1), (2, 2), (3, 5), (6, 10), (11, 20), (21, 50), (51, None))


# Characters XML 1.0 cannot hold at all (not even escaped): dropped from written values.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# The GraphML namespace is a name readers match elements by, never fetched; networkx's constant is the
# one its reader expects. No schema location: nothing needs to find the XSD.
_HEADER = f"<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns=\"{GraphML.NS_GRAPHML}\">\n"


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("", value))


def _attr(value: object) -> str:
    return escape(_NOT_XML.sub("", str(value)), {'"': "&quot;"})


def write_graphml(
    sink: BinaryIO | pa.NativeFile, entities: pa.Table, relationships: pa.Table, communities: pa.Table
) -> None:
    """Write the graph to `sink`, a binary stream (the store's, so that the file lands where the namespace's
    data lives and replaces the old one only when complete). Nodes are entities (title, type, description,
    degree, frequency, `community` = deepest community and `community_level_<k>` per level, -1 where
    absent); edges carry weight and description.

    Written row by row, as networkx's writer would lay it out (`nx.read_graphml` gives the same graph):
    networkx builds the whole graph and then the whole XML tree in memory first, 6 s and most of the
    communities stage on the 11 MB scale corpus."""
    levels = sorted(set(communities.column("level").to_pylist()))
    membership: dict[str, dict[int, int]] = defaultdict(dict)
    for row in communities.select(["community", "level", "entity_ids"]).to_pylist():
        for eid in row["entity_ids"]:
            membership[eid][row["level"]] = row["community"]
    node_keys = [
        ("label", "string"),
        ("type", "string"),
        ("description", "string"),
        ("degree", "long"),
        ("frequency", "long"),
        ("community", "long"),
        *((f"community_level_{lv}", "long") for lv in levels),
    ]
    edge_keys = [("id", "string"), ("weight", "double"), ("description", "string")]
    parts = [_HEADER]
    for i, (name, kind) in enumerate(node_keys):
        parts.append(f'  <key id="n{i}" for="node" attr.name="{name}" attr.type="{kind}" />\n')
    for i, (name, kind) in enumerate(edge_keys):
        parts.append(f'  <key id="e{i}" for="edge" attr.name="{name}" attr.type="{kind}" />\n')
    parts.append('  <graph edgedefault="undirected">\n')
    sink.write("".join(parts).encode("utf-8"))

    def data(prefix: str, values: list[object]) -> str:
        return "".join(
            f'      <data key="{prefix}{i}">{_text(v) if type(v) is str else v}</data>\n'
            for i, v in enumerate(values)
        )

    known: set[str] = set()
    cols = ["id", "title", "type", "description", "degree", "frequency"]
    for batch in entities.select(cols).to_batches(max_chunksize=4096):
        out = []
        for e in batch.to_pylist():
            if e["id"] in known:  # a repeated id is one node, as networkx keeps it: its first place
                continue
            known.add(e["id"])
            at = membership.get(e["id"], {})
            values = [e["title"], e["type"], e["description"] or "", int(e["degree"]), int(e["frequency"])]
            values += [at[max(at)] if at else -1, *(at.get(lv, -1) for lv in levels)]
            out.append(f'    <node id="{_attr(e["id"])}">\n{data("n", values)}    </node>\n')
        sink.write("".join(out).encode("utf-8"))
    cols = ["id", "source_id", "target_id", "weight", "description"]
    rels = relationships.select(cols).to_pylist()
    # An endpoint that is no entity is still a node (networkx adds it with the edge), without data.
    dangling = [n for r in rels for n in (r["source_id"], r["target_id"]) if n not in known]
    sink.write("".join(f'    <node id="{_attr(n)}" />\n' for n in dict.fromkeys(dangling)).encode("utf-8"))
    # networkx keeps one edge per pair of nodes, in the first pair's place, with the last row's data.
    edges: dict[frozenset[str], dict] = {}
    for r in rels:
        edges[frozenset((r["source_id"], r["target_id"]))] = r
    first: dict[frozenset[str], tuple[str, str]] = {}
    for r in rels:
        first.setdefault(frozenset((r["source_id"], r["target_id"])), (r["source_id"], r["target_id"]))
    out = []
    for pair, (source, target) in first.items():
        r = edges[pair]
        values = [r["id"], float(r["weight"]), r["description"] or ""]
        out.append(
            f'    <edge source="{_attr(source)}" target="{_attr(target)}">\n{data("e", values)}    </edge>\n'
        )
        if len(out) >= 4096:
            sink.write("".join(out).encode("utf-8"))
            out = []
    sink.write(("".join(out) + "  </graph>\n</graphml>\n").encode("utf-8"))


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
