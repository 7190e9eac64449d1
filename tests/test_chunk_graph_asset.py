"""The chunk_graph asset end to end: documents -> text units -> embeddings -> chunk graph through a real
Dagster instance (temp DAGSTER_HOME), real LanceDB and MiniLM; then the snapshot is queried and the CLI run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from assets.cli import main
from assets.launch import run_index
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.chunk_graph import ChunkGraph
from pipeline.chunk_graph.indexing import load_namespace_chunk_graph, snapshot_path
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.io.store import NamespaceStore

DOCS = {
    "cats1.txt": "The cat sat on the mat and purred in the warm afternoon sun.",
    "cats2.txt": "A cat was sitting on the mat, purring in the warm afternoon sunshine.",
    # Named things for the entity stage: a corpus that yields no entity fails its blocking check (issue 61).
    "rockets.txt": "The NASA rocket engine burned liquid oxygen and kerosene during the launch from Florida.",
    "bread.txt": "Knead the dough for ten minutes, then let the bread rise before baking it.",
}


def _meta(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dagster_instance):
    storage = tmp_path_factory.mktemp("storage")
    old = os.environ.get("PIPELINE_STORAGE_ROOT")
    os.environ["PIPELINE_STORAGE_ROOT"] = str(storage)
    folder = tmp_path_factory.mktemp("input")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    first = run_index("pets", input_dir=str(folder), instance=dagster_instance)
    yield {"storage": storage, "folder": folder, "first": first, "instance": dagster_instance}
    if old is None:
        os.environ.pop("PIPELINE_STORAGE_ROOT", None)
    else:
        os.environ["PIPELINE_STORAGE_ROOT"] = old


def test_asset_builds_the_snapshot_and_reports_metadata(indexed):
    result = indexed["first"]
    assert result.success, result.failures
    meta = _meta(result, "chunk_graph")
    assert meta["nodes"] == 4 and meta["mode"] == "exact" and meta["reused"] is False
    assert meta["snapshot_bytes"] > 0
    store = NamespaceStore(indexed["storage"], "pets")
    assert Path(meta["snapshot_path"]) == snapshot_path(store) and snapshot_path(store).is_file()

    # What the asset saved is the graph of the stored vectors: an edge for each pair of text units whose
    # cosine is strictly above the threshold (MiniLM's calibrated 0.7), counted here with plain numpy ...
    saved = load_namespace_chunk_graph(store)
    assert saved.threshold == pytest.approx(0.7)
    units = store.open_lance_table("text_units").to_arrow()
    ids = units.column("id").to_pylist()
    vectors = np.array(units.column("vector").to_pylist(), dtype=np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ unit.T
    pairs = {
        frozenset((ids[i], ids[j]))
        for i in range(len(ids))
        for j in range(i + 1, len(ids))
        if cosine[i, j] > saved.threshold
    }
    assert 1 <= len(pairs) < 6  # the paraphrases are linked, not everything with everything
    assert meta["edges"] == len(pairs) and meta["nodes"] == len(ids)
    assert {frozenset((a, b)) for a in saved.ids for b in saved.neighbors(a)} == pairs
    # ... and by a ChunkGraph built directly from the same vectors.
    direct = ChunkGraph.build(
        ids, units.column("text"), None, vectors.astype(np.float32), threshold=saved.threshold, mode="exact"
    )
    assert (direct.num_nodes, direct.num_edges) == (saved.num_nodes, saved.num_edges) == (4, len(pairs))


def test_snapshot_holds_the_text_units_and_links_the_paraphrases(indexed, tmp_path):
    store = NamespaceStore(indexed["storage"], "pets")
    graph = load_namespace_chunk_graph(store, dimension=384)
    units = store.open_lance_table("text_units").to_arrow()
    assert sorted(graph.ids) == sorted(units.column("id").to_pylist())
    by_title = dict(
        zip(units.column("document_title").to_pylist(), units.column("id").to_pylist(), strict=True)
    )
    assert by_title["cats2.txt"] in graph.neighbors(by_title["cats1.txt"])
    assert graph.neighbors(by_title["rockets.txt"]) == {}
    embedder = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(tmp_path / "q.sqlite"))
    hits = graph.query(embedder.embed(["a cat purring on a mat"])[0], top_k=2)
    assert {h.metadata["document_title"] for h in hits} == {"cats1.txt", "cats2.txt"}
    assert set(hits[0].metadata) >= {"document_id", "document_title", "start_char", "end_char"}


def test_cli_query_chunks_prints_ranked_chunks(indexed, capsys):
    code = main(
        ["query", "chunks", "--namespace", "pets", "--top-k", "2", "--seed", "5", "--json", "cat on a mat"]
    )
    assert code == 0
    hits = json.loads(capsys.readouterr().out)
    assert [set(h) for h in hits] == [
        {"id", "content", "metadata", "score", "match"}
    ] * 2  # match: the hit's sentence (issue 34)
    assert {h["metadata"]["document_title"] for h in hits} == {"cats1.txt", "cats2.txt"}
    code = main(
        [
            "query",
            "chunks",
            "--namespace",
            "pets",
            "--filter",
            "document_title=bread.txt",
            "--steps",
            "10",
            "bread",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("1. score=") and "bread.txt" in out and "cats1.txt" not in out
    assert main(["query", "chunks", "--namespace", "pets", "--restart-prob", "1", "cat"]) == 2
    assert "Restart probability must be between 0 and 1" in capsys.readouterr().err


def test_rerun_reuses_the_snapshot_until_the_inputs_change(indexed):
    folder, instance = indexed["folder"], indexed["instance"]
    again = run_index("pets", input_dir=str(folder), instance=instance)
    assert again.success, again.failures
    meta = _meta(again, "chunk_graph")
    assert meta["reused"] is True and meta["nodes"] == 4
    assert meta["fingerprint"] == _meta(indexed["first"], "chunk_graph")["fingerprint"]
    (folder / "cats3.txt").write_text("On the mat a cat sat, purring in the warm sun.", encoding="utf-8")
    changed = run_index("pets", input_dir=str(folder), instance=instance)
    assert changed.success, changed.failures
    meta = _meta(changed, "chunk_graph")
    assert meta["reused"] is False and meta["nodes"] == 5
    graph = load_namespace_chunk_graph(NamespaceStore(indexed["storage"], "pets"))
    assert graph.num_nodes == 5
