"""Hierarchical Leiden communities: nesting, full coverage (no LCC filter), isolates rule, stable ids."""

from __future__ import annotations

import networkx as nx
import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.core.names import relationship_id
from pipeline.ops.communities import build_communities, check_communities, level_summary


def _graph_tables() -> tuple[pa.Table, pa.Table]:
    """Les Misérables co-appearance graph (77 nodes) + a separate 3-node chain + 5 edgeless entities."""
    g = nx.les_miserables_graph()
    g.add_edge("Chain A", "Chain B", weight=1)
    g.add_edge("Chain B", "Chain C", weight=2)
    isolated = {
        "Loner 1": "doc-1",
        "Loner 2": "doc-1",
        "Loner 3": "doc-2",
        "Loner 4": "doc-1",
        "Loner 5": "doc-2",
    }
    names = sorted(g.nodes) + sorted(isolated)
    entities = pa.Table.from_pylist(
        [
            {
                "id": f"id-{name}",
                "title": name,
                "text_unit_ids": [f"tu-{name}"],
                "document_ids": [isolated.get(name, "doc-0")],
            }
            for name in names
        ]
    )
    relationships = pa.Table.from_pylist(
        [
            {
                "id": relationship_id(f"id-{u}", f"id-{v}"),
                "source_id": f"id-{u}",
                "target_id": f"id-{v}",
                "weight": float(d["weight"]),
            }
            for u, v, d in sorted(g.edges(data=True))
        ]
    )
    return entities, relationships


@pytest.fixture(scope="module")
def built():
    entities, relationships = _graph_tables()
    table = build_communities(entities, relationships, max_cluster_size=10, seed=7, period="2024-01-01")
    return entities, relationships, table


def test_table_has_graphrag_columns_and_sound_structure(built):
    entities, _, table = built
    assert table.schema.equals(schema.COMMUNITIES_SCHEMA)
    problems = check_communities(table, set(entities.column("id").to_pylist()))
    assert problems and all(v == 0 for v in problems.values()), problems


def test_levels_nest_and_children_partition_their_parent(built):
    _, _, table = built
    rows = {r["community"]: r for r in table.to_pylist()}
    assert max(r["level"] for r in rows.values()) >= 1  # some community was split
    for r in rows.values():
        if r["level"] == 0:
            assert r["parent"] == -1
        else:
            parent = rows[r["parent"]]
            assert parent["level"] == r["level"] - 1 and r["community"] in parent["children"]
            assert set(r["entity_ids"]) <= set(parent["entity_ids"])
        if r["children"]:
            members = [m for c in r["children"] for m in rows[c]["entity_ids"]]
            assert sorted(members) == r["entity_ids"]
            assert r["size"] >= 10  # only clusters at max_cluster_size or above are split
    numbers = [r["community"] for r in sorted(rows.values(), key=lambda r: (r["level"], r["community"]))]
    assert numbers == sorted(numbers)  # numbered by level


def test_every_entity_has_a_community_including_small_components_and_isolates(built):
    entities, _, table = built
    rows = table.to_pylist()
    level0 = [r for r in rows if r["level"] == 0]
    covered = [m for r in level0 for m in r["entity_ids"]]
    assert sorted(covered) == sorted(entities.column("id").to_pylist())  # each exactly once
    chain = {"id-Chain A", "id-Chain B", "id-Chain C"}
    assert any(chain <= set(r["entity_ids"]) for r in level0)  # not dropped as outside the LCC
    isolates = [r for r in level0 if r["method"] == "isolates"]
    # grouped by document, in title order
    assert [r["entity_ids"] for r in isolates] == [
        ["id-Loner 1", "id-Loner 2", "id-Loner 4"],
        ["id-Loner 3", "id-Loner 5"],
    ]
    assert all(r["children"] == [] and r["relationship_ids"] == [] for r in isolates)


def test_isolates_are_split_at_max_cluster_size():
    entities = pa.Table.from_pylist(
        [
            {"id": f"e{i:02d}", "title": f"E{i:02d}", "text_unit_ids": [], "document_ids": ["d"]}
            for i in range(7)
        ]
    )
    empty = pa.Table.from_pylist(
        [],
        schema=pa.schema(
            [
                ("id", pa.string()),
                ("source_id", pa.string()),
                ("target_id", pa.string()),
                ("weight", pa.float64()),
            ]
        ),
    )
    table = build_communities(entities, empty, max_cluster_size=3)
    assert table.column("size").to_pylist() == [3, 3, 1]
    assert check_communities(table, set(entities.column("id").to_pylist()))["entities_without_community"] == 0


def test_inner_relationships_and_text_units(built):
    _, relationships, table = built
    ends = {r["id"]: (r["source_id"], r["target_id"]) for r in relationships.to_pylist()}
    for r in table.to_pylist():
        members = set(r["entity_ids"])
        assert all(set(ends[rid]) <= members for rid in r["relationship_ids"])
        assert r["text_unit_ids"] == sorted(f"tu-{m[3:]}" for m in members)
        assert r["title"] == f"Community {r['community']}" and r["size"] == len(members)


def test_same_input_same_ids_and_numbers(built):
    entities, relationships, table = built
    again = build_communities(entities, relationships, max_cluster_size=10, seed=7, period="2024-01-01")
    assert again.equals(table)


def test_level_summary_counts_every_level(built):
    _, _, table = built
    summary = level_summary(table)
    assert sum(v["communities"] for v in summary.values()) == table.num_rows
    assert summary[0]["entities"] == 85  # 77 + 3 + 5: all entities at level 0


def test_checks_detect_broken_tables(built):
    entities, _, table = built
    rows = table.to_pylist()
    ids = set(entities.column("id").to_pylist())
    split = next(r for r in rows if r["children"])
    child = next(r for r in rows if r["community"] == split["children"][0])
    child["entity_ids"] = child["entity_ids"][1:]  # a member lost on the way down
    rows.append({**rows[0], "community": 999, "entity_ids": [], "children": [], "parent": -1})
    broken = pa.Table.from_pylist(rows, schema=schema.COMMUNITIES_SCHEMA)
    problems = check_communities(broken, ids | {"id-never-clustered"})
    assert problems["children_not_a_partition"] >= 1
    assert problems["empty_communities"] == 1
    assert problems["entities_without_community"] == 1
