"""Mastra's GraphRAG class over ChunkGraph: Mastra code ports line by line and its snapshots load."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.chunk_graph import ChunkGraphError, GraphRAG, SnapshotError


def _data(n: int = 6, dim: int = 8):
    rng = np.random.default_rng(3)
    base = rng.normal(size=(2, dim))
    vectors = [base[i % 2] + 0.05 * rng.normal(size=dim) for i in range(n)]  # two tight groups
    chunks = [{"text": f"chunk {i}", "metadata": {"group": i % 2}} for i in range(n)]
    return chunks, [{"vector": v.tolist()} for v in vectors], vectors


def test_mastra_calls_build_and_query_with_ids_by_position():
    chunks, embeddings, vectors = _data()
    graph = GraphRAG(dimension=8, threshold=0.7)
    graph.createGraph(chunks, embeddings)
    hits = graph.query(query=vectors[0].tolist(), topK=3, randomWalkSteps=50, restartProb=0.2)
    assert len(hits) == 3 and set(hits[0]) == {"id", "content", "metadata", "score"}
    assert {h["metadata"]["group"] for h in hits} == {0}  # the query's own group
    assert all(h["id"] == str(int(h["id"])) and h["content"] == f"chunk {h['id']}" for h in hits)
    assert graph.query(vectors[0].tolist(), top_k=3) == graph.query(vectors[0].tolist(), top_k=3)  # seeded
    assert [h["metadata"]["group"] for h in graph.query(vectors[0].tolist(), filter={"group": 1})] == [
        1,
        1,
        1,
    ]


def test_empty_or_mismatched_input_is_an_error_as_in_mastra():
    chunks, embeddings, _ = _data()
    graph = GraphRAG(dimension=8)
    with pytest.raises(ChunkGraphError, match="must not be empty"):
        graph.create_graph([], [])
    with pytest.raises(ChunkGraphError, match="same length"):
        graph.create_graph(chunks, embeddings[:-1])
    with pytest.raises(ChunkGraphError, match="must have 16 values, got 8"):
        GraphRAG(dimension=16).create_graph(chunks, embeddings)
    with pytest.raises(ChunkGraphError, match="call create_graph"):
        graph.query([0.0] * 8)
    graph.create_graph(chunks, embeddings)
    with pytest.raises(TypeError, match="unexpected keyword argument 'k'"):
        graph.query([0.0] * 8, k=3)


def test_a_mastra_snapshot_round_trips_through_json_unchanged():
    chunks, embeddings, vectors = _data()
    graph = GraphRAG(dimension=8, threshold=0.7)
    graph.create_graph(chunks, embeddings)
    snapshot = json.loads(json.dumps(graph.serialize()))  # as Mastra stores it
    assert snapshot["version"] == 1 and snapshot["dimension"] == 8 and len(snapshot["nodes"]) == 6
    assert all(e["type"] == "semantic" and e["weight"] > 0.7 for e in snapshot["edges"])
    again = GraphRAG.deserialize(snapshot)
    assert again.query(vectors[1].tolist(), top_k=4) == graph.query(vectors[1].tolist(), top_k=4)
    with pytest.raises(SnapshotError, match="Unsupported GraphRAG snapshot version: 2"):
        GraphRAG.deserialize({**snapshot, "version": 2})
