"""The graph page's nodes (issue 60): sized by degree within fixed bounds, not by their community's rank,
and placed so that no two discs overlap, the same way on every build."""

from __future__ import annotations

import json
import random
import re

import pyarrow as pa

from pipeline.core import schema
from pipeline.core.tables import TABLE_SCHEMAS
from pipeline.ops.graph_layout import GAP, MAX_SIZE, MIN_SIZE
from pipeline.ops.graph_view import graph_data, graph_html
from tests.support.drawing import overlaps


def _tables(n: int, edges: list[tuple[int, int]], communities: list[list[int]]) -> tuple[pa.Table, ...]:
    degree = [0] * n
    for a, b in edges:
        degree[a] += 1
        degree[b] += 1
    entities = [
        {"id": f"e{i}", "title": f"Entity {i}", "type": "PERSON", "degree": degree[i], "aliases": []}
        for i in range(n)
    ]
    relationships = [
        {"id": f"r{k}", "source_id": f"e{a}", "target_id": f"e{b}", "weight": 1.0}
        for k, (a, b) in enumerate(edges)
    ]
    comms = [
        {"id": f"c{c}", "community": c, "level": 0, "entity_ids": [f"e{i}" for i in m], "size": len(m)}
        for c, m in enumerate(communities)
    ]
    return (
        pa.Table.from_pylist(entities, schema=TABLE_SCHEMAS[schema.ENTITIES]),
        pa.Table.from_pylist(relationships, schema=TABLE_SCHEMAS[schema.RELATIONSHIPS]),
        pa.Table.from_pylist(comms, schema=TABLE_SCHEMAS[schema.COMMUNITIES]),
    )


def _dense(n: int = 120, seed: int = 3) -> tuple[pa.Table, ...]:
    """One central community of 100 well-connected entities (a hub among them), a small one, isolates."""
    rng = random.Random(seed)
    central = list(range(100))
    edges = {(0, i) for i in range(1, 100)}  # entity 0 is the hub
    while len(edges) < 600:
        a, b = sorted(rng.sample(central, 2))
        edges.add((a, b))
    edges |= {(100, 101), (101, 102)}
    return _tables(n, sorted(edges), [central, [100, 101, 102]])


def test_node_sizes_are_bounded_and_follow_degree_not_community_rank() -> None:
    entities, relationships, communities = _dense()
    # The small community ranks first: before, every node took its community's rank as its size.
    data = graph_data(entities, relationships, communities, ranks={1: 9.0, 0: 1.0})
    nodes = {n["id"]: n for n in data["nodes"]}
    sizes = [n["size"] for n in nodes.values()]
    assert all(MIN_SIZE <= s <= MAX_SIZE for s in sizes), (min(sizes), max(sizes))
    assert nodes["e0"]["size"] == MAX_SIZE  # the hub, the most connected
    assert nodes["e119"]["size"] == MIN_SIZE  # an isolate
    assert nodes["e101"]["size"] < nodes["e0"]["size"]  # the top-ranked community's nodes are small
    by_degree = sorted(nodes.values(), key=lambda n: n["degree"])
    assert [n["size"] for n in by_degree] == sorted(n["size"] for n in by_degree)
    assert len({n["size"] for n in nodes.values() if n["community"] == 0}) > 5  # not one size per community
    assert "value" not in nodes["e0"]  # no value scaling left for the page to stretch


def test_no_two_nodes_overlap_and_the_layout_is_the_same_each_time() -> None:
    tables = _dense()
    data = graph_data(*tables)
    positions = {n["id"]: (n["x"], n["y"]) for n in data["nodes"]}
    sizes = {n["id"]: n["size"] for n in data["nodes"]}
    assert overlaps(positions, sizes) == []
    assert GAP > 0
    assert graph_data(*tables) == data  # seeded: a rebuilt page draws the same picture


def test_the_page_draws_the_laid_out_positions_without_physics() -> None:
    data = graph_data(*_dense())
    page = graph_html(data, "ns: entity graph")
    options = json.loads(re.search(r"^  (\{.*\})\);$", page, flags=re.MULTILINE).group(1))
    assert options["physics"] is False
    assert options["nodes"]["font"]["size"] >= 12 and options["nodes"]["font"]["strokeWidth"] > 0
