"""Chunk graph: build (exact / approximate), query (walk / PPR, filters, validation), snapshots."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from pipeline.chunk_graph import ChunkGraph, ChunkGraphError, SnapshotError
from pipeline.chunk_graph.walk import Adjacency, personalized_pagerank, random_walk_scores


def _clustered(n: int, dim: int = 32, cluster: int = 10, seed: int = 0) -> np.ndarray:
    """Unit vectors in clusters whose intra-cluster cosine straddles 0.7 (the bench's data shape)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((-(-n // cluster), dim))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    noise = rng.standard_normal((n, dim))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    x = centers[np.arange(n) // cluster] + np.sqrt(rng.uniform(0.2, 0.7, n))[:, None] * noise
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _graph(vectors, threshold=0.7, metadata=None, **kw) -> ChunkGraph:
    ids = [f"n{i}" for i in range(len(vectors))]
    return ChunkGraph.build(ids, [f"text of {i}" for i in ids], metadata, vectors, threshold=threshold, **kw)


def _edge_set(graph: ChunkGraph) -> set[tuple[str, str]]:
    return {(a, b) for a in graph.ids for b in graph.neighbors(a) if a < b}


# ---- build ---------------------------------------------------------------------------------------


def test_tiny_graph_has_exactly_the_edges_above_threshold_weighted_by_cosine():
    # Not unit length on purpose: edges must use the cosine, not the dot product.
    vectors = np.array([[2, 0, 0], [3, 1, 0], [0, 5, 0], [0, 4, 1]], dtype=np.float32)
    graph = _graph(vectors, threshold=0.7)
    assert _edge_set(graph) == {("n0", "n1"), ("n2", "n3")}
    assert graph.neighbors("n0") == pytest.approx({"n1": 3 / np.sqrt(10)})
    assert graph.neighbors("n1") == pytest.approx({"n0": 3 / np.sqrt(10)})  # undirected
    assert graph.neighbors("n3") == pytest.approx({"n2": 4 / np.sqrt(17)})
    assert graph.num_edges == 2 and graph.num_directed_edges == 4
    assert graph.build_info["mode"] == "exact"


@pytest.mark.parametrize("mode", ["exact", "approximate"])
def test_threshold_is_strict_and_decided_in_double_precision(mode):
    # cos([4,0],[3,4]) is exactly 0.6: no edge at threshold 0.6 (strict), an edge just below it.
    vectors = np.array([[4, 0], [3, 4]], dtype=np.float32)
    assert _edge_set(_graph(vectors, threshold=0.6, mode=mode)) == set()
    assert _edge_set(_graph(vectors, threshold=0.5999, mode=mode)) == {("n0", "n1")}
    # In double precision (Mastra's) cos([1,0],[0.6f,0.8f]) = 0.6000000095 > 0.6, though float32
    # arithmetic rounds it to 0.6: the near-threshold re-check must keep this edge.
    vectors = np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)
    assert _edge_set(_graph(vectors, threshold=0.6, mode=mode)) == {("n0", "n1")}


def test_blocked_exact_build_matches_brute_force_across_block_boundaries():
    vectors = _clustered(73)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit.astype(np.float64) @ unit.T.astype(np.float64)
    expected = {
        (f"n{i}", f"n{j}") for i in range(73) for j in range(73) if f"n{i}" < f"n{j}" and sims[i, j] > 0.7
    }
    assert expected
    for block in (7, 16, 4096):
        assert _edge_set(_graph(vectors, mode="exact", block_size=block)) == expected


def test_approximate_mode_is_reported_and_finds_the_exact_edges():
    vectors = _clustered(1500, dim=48, cluster=25)
    exact = _graph(vectors, mode="exact")
    approx = _graph(vectors, mode="auto", exact_max_nodes=1000, neighbors=40, nprobes=8)
    info = approx.build_info
    assert info["mode"] == "approximate" and info["requested_mode"] == "auto"
    assert info["index"] == "IVF_FLAT" and info["neighbors"] == 40 and info["nprobes"] == 8
    exact_edges, approx_edges = _edge_set(exact), _edge_set(approx)
    assert approx_edges <= exact_edges  # never an edge below the threshold
    assert len(approx_edges) >= 0.95 * len(exact_edges)


def test_approximate_mode_keeps_each_nodes_heaviest_edges_up_to_the_cap():
    vectors = _clustered(1200, dim=48, cluster=40)
    exact = _graph(vectors, mode="exact")
    capped = _graph(vectors, mode="approximate", neighbors=3, nprobes=6)
    weight = {(a, b): w for a in exact.ids for b, w in exact.neighbors(a).items()}
    heaviest = {a: sorted(exact.neighbors(a), key=lambda b: (-weight[(a, b)], b))[:3] for a in exact.ids}
    kept = _edge_set(capped)
    assert kept and kept <= _edge_set(exact)
    # an edge stays only if it is among the 3 heaviest of one of its ends (ties aside, by weight)
    for a, b in kept:
        top_a = [weight[(a, x)] for x in heaviest[a]]
        top_b = [weight[(b, x)] for x in heaviest[b]]
        assert weight[(a, b)] >= min(top_a) or weight[(a, b)] >= min(top_b)
    assert max(capped.degrees()) < max(exact.degrees())


def test_build_rejects_bad_input_with_clear_errors():
    v = np.eye(3, dtype=np.float32)
    with pytest.raises(ChunkGraphError, match="same length"):
        ChunkGraph.build(["a", "b", "c"], ["x", "y"], None, v)
    with pytest.raises(ChunkGraphError, match="one row per id"):
        ChunkGraph.build(["a", "b"], ["x", "y"], None, v)
    with pytest.raises(ChunkGraphError, match="unique"):
        ChunkGraph.build(["a", "a", "c"], ["x", "y", "z"], None, v)
    with pytest.raises(ChunkGraphError, match="not finite"):
        ChunkGraph.build(["a", "b", "c"], ["x", "y", "z"], None, v * np.array([1, np.nan, 1], np.float32))
    with pytest.raises(ChunkGraphError, match="threshold"):
        ChunkGraph.build(["a", "b", "c"], ["x", "y", "z"], None, v, threshold=1.5)
    with pytest.raises(ChunkGraphError, match="JSON objects"):
        ChunkGraph.build(["a", "b", "c"], ["x", "y", "z"], [{"when": object()}] * 3, v)


# ---- query ---------------------------------------------------------------------------------------


def test_without_edges_the_query_is_plain_top_k_cosine():
    vectors = np.eye(4, dtype=np.float32)
    graph = _graph(vectors)
    hits = graph.query([0.9, 0.3, 0.1, 0.0], top_k=3)
    assert [h.id for h in hits] == ["n0", "n1", "n2"]
    norm = np.linalg.norm([0.9, 0.3, 0.1])
    assert [h.score for h in hits] == pytest.approx([0.9 / norm, 0.3 / norm, 0.1 / norm])
    assert hits[0].content == "text of n0"


def test_scores_sum_to_the_seed_similarities_and_neighbours_of_seeds_are_found():
    vectors = _clustered(40)
    graph = _graph(vectors)
    q = vectors[3] + 0.05
    hits = graph.query(q, top_k=40, random_walk_steps=200)  # every node a seed: all mass accounted for
    sims = graph.similarities(q)
    assert sum(h.score for h in hits) == pytest.approx(sims.sum(), rel=1e-9)
    few = graph.query(q, top_k=3, random_walk_steps=200)
    seeds = {f"n{i}" for i in np.argsort(-sims)[:3]}
    reached = set(seeds).union(*(graph.neighbors(s) for s in seeds))
    assert {h.id for h in few} <= reached


def test_same_seed_same_answer_and_different_seed_different_walk():
    vectors = _clustered(60)
    graph = _graph(vectors)
    q = vectors[5]
    first = graph.query(q, top_k=8, seed=42)
    assert graph.query(q, top_k=8, seed=42) == first
    assert graph.query(q, top_k=8) == graph.query(q, top_k=8)  # the default is seeded too
    assert [h.score for h in graph.query(q, top_k=8, seed=43)] != [h.score for h in first]
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    assert graph.query(q, top_k=8, seed=rng_a) == graph.query(q, top_k=8, seed=rng_b)


def test_random_walk_visit_frequencies_converge_to_exact_ppr():
    # Two triangles joined by one edge, plus a dangling node 6 reachable only from 5 (directed).
    rows = np.array([0, 1, 0, 3, 4, 3, 2, 1, 2, 0, 4, 5, 5, 3, 5])
    cols = np.array([1, 0, 2, 4, 3, 5, 3, 2, 1, 2, 5, 4, 3, 2, 6])
    weights = np.linspace(0.7, 1.0, len(rows))
    adj = Adjacency.from_pairs(7, rows, cols, weights, symmetric=False)
    seeds, sims = np.array([0, 4]), np.array([0.9, 0.6])
    nodes, dist = personalized_pagerank(adj, seeds, restart_prob=0.2)
    assert np.allclose(dist.sum(axis=1), 1.0)
    exact = np.zeros(7)
    exact[nodes] = sims @ dist
    visited, scores = random_walk_scores(adj, seeds, sims, 100_000, 0.2, np.random.default_rng(0))
    walk = np.zeros(7)
    walk[visited] = scores
    assert np.abs(walk - exact).max() < 0.01
    assert exact[6] > 0  # the dangling node is reached, and its walker returns to the seed


def test_query_walk_and_ppr_methods_agree_on_a_small_graph():
    vectors = _clustered(30)
    graph = _graph(vectors)
    q = vectors[12]
    ppr = {h.id: h.score for h in graph.query(q, top_k=5, method="ppr")}
    walk = {h.id: h.score for h in graph.query(q, top_k=5, random_walk_steps=50_000, seed=1)}
    for node_id in set(ppr) & set(walk):
        assert walk[node_id] == pytest.approx(ppr[node_id], abs=0.01)
    assert len(set(ppr) & set(walk)) >= 4


def test_filter_restricts_seeds_and_walk_with_strict_equality():
    vectors = np.array([[1, 0], [0.95, 0.1], [0.9, 0.2], [0.97, 0.05]], dtype=np.float32)
    meta = [{"doc": "a", "n": 1}, {"doc": "b", "n": True}, {"doc": "a", "n": "1"}, {"doc": "b", "n": 1.0}]
    graph = _graph(vectors, metadata=meta)
    assert graph.neighbors("n0")  # all four are connected, so an unfiltered walk reaches everything
    hits = graph.query([1, 0], top_k=4, filter={"doc": "a"})
    assert {h.id for h in hits} == {"n0", "n2"}
    assert all(h.metadata["doc"] == "a" for h in hits)
    # JavaScript ===: 1 matches 1 and 1.0, not true nor "1".
    assert {h.id for h in graph.query([1, 0], top_k=4, filter={"n": 1})} == {"n0", "n3"}
    assert graph.query([1, 0], filter={"doc": "zzz"}) == []
    assert graph.query([1, 0], filter={"missing": None}) == []
    with pytest.raises(ChunkGraphError, match="filter value"):
        graph.query([1, 0], filter={"doc": ["a"]})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query_vector": [1, 0, 0]}, "Query embedding must have dimension 2"),
        ({"top_k": 0}, "TopK must be greater than 0"),
        ({"random_walk_steps": 0}, "Random walk steps must be greater than 0"),
        ({"restart_prob": 0}, "Restart probability must be between 0 and 1"),
        ({"restart_prob": 1}, "Restart probability must be between 0 and 1"),
        ({"method": "magic"}, "method must be"),
    ],
)
def test_query_validation(kwargs, message):
    graph = _graph(np.eye(2, dtype=np.float32))
    args = {"query_vector": [1, 0], **kwargs}
    with pytest.raises(ChunkGraphError, match=message):
        graph.query(**args)


def test_empty_graph_answers_nothing():
    graph = ChunkGraph.build([], [], None, np.zeros((0, 8), np.float32))
    assert graph.num_nodes == 0 and graph.query(np.ones(8)) == []


# ---- snapshots -----------------------------------------------------------------------------------


def test_snapshot_round_trip_in_bytes_and_on_disk(tmp_path):
    vectors = _clustered(50)
    meta = [{"doc": f"d{i % 3}", "start": i} for i in range(50)]
    graph = _graph(vectors, metadata=meta)
    for loaded in (ChunkGraph.deserialize(graph.serialize()), None):
        if loaded is None:
            size = graph.save(tmp_path / "g.arrow")
            assert size == (tmp_path / "g.arrow").stat().st_size
            loaded = ChunkGraph.load(tmp_path / "g.arrow")
        assert loaded.ids == graph.ids
        assert loaded.threshold == graph.threshold and loaded.dimension == 32
        assert _edge_set(loaded) == _edge_set(graph)
        assert loaded.neighbors("n7") == graph.neighbors("n7")
        assert loaded.build_info == graph.build_info
        assert loaded.query(vectors[9], filter={"doc": "d0"}) == graph.query(vectors[9], filter={"doc": "d0"})
        assert loaded.query(vectors[9], method="ppr") == graph.query(vectors[9], method="ppr")


def _tampered(graph: ChunkGraph, change) -> bytes:
    table = pa.ipc.open_file(pa.BufferReader(graph.serialize())).read_all()
    table = change(table)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _with_meta(**updates):
    def change(table: pa.Table) -> pa.Table:
        meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
        return table.replace_schema_metadata({**meta, **updates})

    return change


def test_loading_rejects_each_kind_of_bad_snapshot():
    graph = _graph(_clustered(20))
    assert ChunkGraph.deserialize(_tampered(graph, lambda t: t)).num_edges == graph.num_edges
    with pytest.raises(SnapshotError, match="unsupported chunk graph snapshot version '2'"):
        ChunkGraph.deserialize(_tampered(graph, _with_meta(format_version="2")))
    with pytest.raises(SnapshotError, match="dimension mismatch: header says 16, vectors have 32"):
        ChunkGraph.deserialize(_tampered(graph, _with_meta(dimension="16")))
    with pytest.raises(SnapshotError, match="dimension 32 but 384 is expected"):
        ChunkGraph.deserialize(graph.serialize(), dimension=384)

    def bad_edge(table: pa.Table) -> pa.Table:
        neighbors = table.column("neighbors").combine_chunks()
        values = neighbors.values.to_numpy().copy()
        values[0] = 99
        fixed = pa.LargeListArray.from_arrays(neighbors.offsets, pa.array(values, pa.int32()))
        return table.set_column(table.schema.get_field_index("neighbors"), "neighbors", fixed)

    with pytest.raises(SnapshotError, match="Edge references unknown node: index 99"):
        ChunkGraph.deserialize(_tampered(graph, bad_edge))
    with pytest.raises(SnapshotError, match="not a chunk graph snapshot"):
        ChunkGraph.deserialize(b'{"version": 1}')


# ---- Mastra JSON ---------------------------------------------------------------------------------

MASTRA_SNAPSHOT = {
    "version": 1,
    "dimension": 3,
    "threshold": 0.7,
    "nodes": [
        {"id": "0", "content": "alpha", "embedding": [1, 0, 0], "metadata": {"source": "a.md"}},
        {"id": "1", "content": "alpha again", "embedding": [0.9, 0.1, 0], "metadata": {"source": "b.md"}},
        {"id": "2", "content": "gamma", "embedding": [0, 0, 1], "metadata": {"source": "a.md"}},
    ],
    "edges": [
        {"source": "0", "target": "1", "weight": 0.99, "type": "semantic"},
        {"source": "1", "target": "0", "weight": 0.99, "type": "semantic"},
    ],
}


def test_import_hand_written_mastra_snapshot():
    graph = ChunkGraph.from_mastra_json(json.loads(json.dumps(MASTRA_SNAPSHOT)))
    assert graph.ids == ["0", "1", "2"] and graph.dimension == 3 and graph.threshold == 0.7
    assert graph.neighbors("0") == pytest.approx({"1": 0.99})
    assert graph.neighbors("2") == {}
    hits = graph.query([1, 0, 0], top_k=2, method="ppr")
    assert [h.id for h in hits] == ["0", "1"] and hits[1].content == "alpha again"
    assert {h.id for h in graph.query([1, 0, 0], top_k=2)} == {"0", "1"}
    assert [h.id for h in graph.query([1, 0, 0], filter={"source": "a.md"})] == ["0", "2"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 2}, "Unsupported GraphRAG snapshot version: 2"),
        ({"edges": [{"source": "0", "target": "7", "weight": 0.9}]}, "Edge references unknown node: 7"),
        (
            {"nodes": [{"id": "0", "content": "x", "embedding": [1, 0]}], "edges": []},
            "embedding has 2 values",
        ),
        ({"edges": [{"source": "0", "target": "1", "weight": -1}]}, "must be > 0"),
    ],
)
def test_mastra_import_rejects_bad_snapshots(change, message):
    with pytest.raises(SnapshotError, match=message):
        ChunkGraph.from_mastra_json({**MASTRA_SNAPSHOT, **change})


def test_mastra_export_has_both_edge_directions_and_imports_back():
    graph = _graph(_clustered(30), metadata=[{"i": i} for i in range(30)])
    exported = json.loads(json.dumps(graph.to_mastra_json()))
    assert exported["version"] == 1 and exported["dimension"] == 32 and exported["threshold"] == 0.7
    assert len(exported["edges"]) == graph.num_directed_edges == 2 * graph.num_edges
    pairs = {(e["source"], e["target"]) for e in exported["edges"]}
    assert all((t, s) in pairs for s, t in pairs)
    assert exported["nodes"][4]["metadata"] == {"i": 4} and len(exported["nodes"][4]["embedding"]) == 32
    back = ChunkGraph.from_mastra_json(exported)
    assert _edge_set(back) == _edge_set(graph)
    assert back.query(_clustered(30)[2], seed=3) == graph.query(_clustered(30)[2], seed=3)
