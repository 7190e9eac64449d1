from __future__ import annotations

import multiprocessing as mp

import numpy as np

from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder


def test_minilm_loads_offline_from_the_package_and_gives_unit_vectors():
    vectors = LocalMiniLMEmbedder().embed(["A ghost visits Scrooge.", "Quarterly revenue grew."])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) < 0.5


def test_long_text_is_split_into_windows_that_cover_it():
    text = " ".join(f"token{i}" for i in range(600))
    spans = LocalMiniLMEmbedder().split(text)
    assert len(spans) > 1
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))  # windows overlap


def test_cache_serves_repeated_texts_and_counts_hits(tmp_path):
    emb = CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(tmp_path / "e.sqlite"))
    first = emb.embed(["alpha", "beta", "alpha"])
    assert (emb.computed, emb.cache_hits) == (2, 0)
    again = CachedEmbedder(emb.embedder, EmbeddingCache(tmp_path / "e.sqlite"))
    second = again.embed(["beta", "alpha"])
    assert (again.computed, again.cache_hits) == (0, 2)
    assert np.allclose(first[[1, 0]], second)


class _Fake:
    """Deterministic stand-in for a model so two processes can write the cache quickly."""

    model_id = "fake:test"
    dimension = 4

    def split(self, text):
        return [(0, len(text))]

    def embed(self, texts):
        return np.array([[len(t), 1, 2, 3] for t in texts], dtype=np.float32)


def _writer(path, prefix):
    emb = CachedEmbedder(_Fake(), EmbeddingCache(path), batch_size=7)
    emb.embed([f"{prefix}-{i}" for i in range(300)])


def test_two_processes_writing_the_cache_lose_nothing(tmp_path):
    path = tmp_path / "shared.sqlite"
    EmbeddingCache(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, p)) for p in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert EmbeddingCache(path).count("fake:test") == 600
