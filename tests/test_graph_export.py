"""The streaming GraphML writer against networkx's: `nx.read_graphml` must give the same graph from both."""

from __future__ import annotations

import io
from collections import defaultdict

import networkx as nx
import pyarrow as pa

from pipeline.ops.graph_export import write_graphml


def _tables() -> tuple[pa.Table, pa.Table, pa.Table]:
    entities = pa.table(
        {
            "id": ["a", "b", "c&<d>", "e", "a"],
            "title": ['ALPHA "one"', "BETA\x0b", "C & <D>", "EPSILON", "ALPHA again"],
            "type": ["person", "place", "", "event", "person"],
            "description": ["first\nline", None, "ünïcode ✓ 'quoted'", "no community", "repeat"],
            "degree": [2, 1, 2, 0, 2],
            "frequency": [3, 1, 1, 1, 3],
        }
    )
    relationships = pa.table(
        {
            "id": ["r1", "r2", "r3", "r4"],
            "source_id": ["a", "c&<d>", "b", "a"],
            "target_id": ["b", "a", "a", "ghost"],
            "weight": [1.0, 2.5, 4.0, 1.0],
            "description": ["a knows b", None, "b knows a, reversed and later", "to a node no entity has"],
        }
    )
    communities = pa.table(
        {
            "community": [0, 1, 2],
            "level": [0, 0, 1],
            "entity_ids": [["a", "b"], ["c&<d>"], ["a"]],
        }
    )
    return entities, relationships, communities


def _networkx_reference(entities: pa.Table, relationships: pa.Table, communities: pa.Table) -> bytes:
    """The writer this module replaced (networkx builds the graph, then writes it), kept as the reference."""
    graph = nx.Graph()
    levels = sorted(set(communities.column("level").to_pylist()))
    membership: dict[str, dict[int, int]] = defaultdict(dict)
    for row in communities.to_pylist():
        for eid in row["entity_ids"]:
            membership[eid][row["level"]] = row["community"]
    for e in entities.to_pylist():
        if e["id"] in graph:
            continue
        at = membership.get(e["id"], {})
        attrs = {
            "label": e["title"].replace("\x0b", ""),
            "type": e["type"],
            "description": e["description"] or "",
            "degree": int(e["degree"]),
            "frequency": int(e["frequency"]),
            "community": at[max(at)] if at else -1,
        }
        attrs.update({f"community_level_{lv}": at.get(lv, -1) for lv in levels})
        graph.add_node(e["id"], **attrs)
    for r in relationships.to_pylist():
        graph.add_edge(
            r["source_id"],
            r["target_id"],
            id=r["id"],
            weight=float(r["weight"]),
            description=r["description"] or "",
        )
    sink = io.BytesIO()
    nx.write_graphml(graph, sink)
    return sink.getvalue()


def _read(data: bytes) -> nx.Graph:
    return nx.read_graphml(io.BytesIO(data))


def test_streamed_graphml_reads_back_as_the_graph_networkx_writes():
    tables = _tables()
    sink = io.BytesIO()
    write_graphml(sink, *tables)
    ours, reference = _read(sink.getvalue()), _read(_networkx_reference(*tables))
    assert list(ours.nodes(data=True)) == list(reference.nodes(data=True))
    assert {frozenset(e) for e in ours.edges} == {frozenset(e) for e in reference.edges}
    for u, v, data in reference.edges(data=True):
        assert ours.edges[u, v] == data


def test_graphml_keeps_one_edge_per_pair_with_the_last_rows_data_and_typed_values():
    sink = io.BytesIO()
    write_graphml(sink, *_tables())
    graph = _read(sink.getvalue())
    assert graph.number_of_nodes() == 5  # a, b, c&<d>, e and the dangling "ghost"; "a" once
    assert graph.nodes["a"]["label"] == 'ALPHA "one"'  # the first row of a repeated id
    assert graph.nodes["b"]["label"] == "BETA"  # the control character XML cannot hold is dropped
    assert graph.nodes["e"]["community"] == -1 and graph.nodes["e"]["community_level_1"] == -1
    assert graph.nodes["a"]["community"] == 2 and graph.nodes["a"]["community_level_0"] == 0
    assert graph.nodes["ghost"] == {}
    assert graph.edges["a", "b"] == {
        "id": "r3",
        "weight": 4.0,
        "description": "b knows a, reversed and later",
    }
    assert isinstance(graph.nodes["a"]["degree"], int)
