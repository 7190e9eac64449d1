from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder, cpu_has_native_bf16, resolve_precision
from tests.support.cpu import BF16_FLAGS, cpu_has_bf16

NO_BF16 = f"this CPU has none of {sorted(BF16_FLAGS)}: bf16 would be emulated, so the embedder refuses it"


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


class _Recording(LocalMiniLMEmbedder):
    """The real model, with each call's texts recorded."""

    def __init__(self) -> None:
        # fp32: this test is about which texts reach the model, and bf16 results move by ~1e-3 with
        # the batch a text shares (its padded length), fp32 by less than the 1e-5 compared below
        super().__init__(precision="fp32")
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return super().embed(texts)


def test_uncached_texts_reach_the_model_longest_first_in_calls_of_batch_size(tmp_path):
    texts = [("word " * n).strip() for n in (3, 40, 7, 25, 1, 60, 12)]
    model = _Recording()
    emb = CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite"), batch_size=3)
    vectors = emb.embed(texts)
    sent = [t for call in model.calls for t in call]
    assert [len(c) for c in model.calls] == [3, 3, 1]
    assert [len(t) for t in sent] == sorted((len(t) for t in texts), reverse=True)
    # each text's vector is its own, whatever order the model saw it in
    assert np.allclose(vectors, LocalMiniLMEmbedder(precision="fp32").embed(texts), atol=1e-5)


def test_a_text_no_longer_than_the_window_in_characters_has_no_more_tokens_than_that():
    # split() skips the tokenizer for such texts: every word-piece covers at least one character.
    model = LocalMiniLMEmbedder()
    window = model._load().max_seq_length - 2
    samples = [
        "a" * window,
        "a " * (window // 2),
        "ü.,;!?" * (window // 6),
        "日本語" * (window // 3),
        "x-1 " * 63,
    ]
    for text in samples:
        assert len(text) <= window
        tokens = model._load().tokenizer(text, add_special_tokens=False)["input_ids"]
        assert len(tokens) <= len(text)
        assert model.split(text) == [(0, len(text))]


def test_int8_minilm_has_its_own_cache_identity_and_nearly_the_same_vectors():
    texts = [
        "A ghost visits Scrooge on Christmas Eve.",
        "Quarterly revenue grew by ten percent.",
        "Marley was dead.",
    ]
    full, int8 = LocalMiniLMEmbedder(), LocalMiniLMEmbedder(quantize="int8")
    assert int8.model_id != full.model_id and int8.model_id.endswith(":int8")
    a, b = full.embed(texts), int8.embed(texts)
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert (np.einsum("ij,ij->i", a, b) > 0.9).all()  # measured 0.94-0.96 on these
    assert not np.allclose(a, b, atol=1e-4)  # the quantized model really ran


def test_auto_precision_is_bf16_exactly_where_the_cpu_multiplies_bf16_natively(monkeypatch):
    import pipeline.embeddings.minilm as minilm

    monkeypatch.setattr(minilm, "cpu_has_native_bf16", lambda: True)
    assert LocalMiniLMEmbedder().precision == "bf16"
    assert LocalMiniLMEmbedder().model_id.endswith(":normalized:bf16")
    assert LocalMiniLMEmbedder(quantize="int8").precision == "fp32"  # int8 asked for: no bf16 on top
    assert LocalMiniLMEmbedder(device="cuda").precision == "fp32"
    monkeypatch.setattr(minilm, "cpu_has_native_bf16", lambda: False)
    assert LocalMiniLMEmbedder().precision == "fp32"
    assert LocalMiniLMEmbedder().model_id.endswith(":normalized")
    with pytest.raises(ValueError, match="bf16 instructions"):
        LocalMiniLMEmbedder(precision="bf16")
    with pytest.raises(ValueError, match="exclude each other"):
        LocalMiniLMEmbedder(precision="bf16", quantize="int8")


def test_the_embedders_bf16_detection_agrees_with_the_cpu_flags():
    """The bf16 tests below are skipped by the test suite's own reading of the CPU; this keeps that
    reading and the embedder's in step, so a machine with bf16 runs the bf16 path (and fails loudly if it
    broke) rather than skip it because the embedder stopped seeing the instructions."""
    assert cpu_has_native_bf16() == cpu_has_bf16()
    assert resolve_precision("auto", "cpu", "none") == ("bf16" if cpu_has_bf16() else "fp32")


# The pair below splits on hardware, not on an installed dependency: exactly one of the two runs on any
# machine, and the test above fails if the embedder's own bf16 detection disagrees with the CPU flags.
@pytest.mark.skipif(cpu_has_bf16(), reason="this CPU has bf16 instructions: the bf16 test runs instead")
def test_without_bf16_instructions_the_default_is_fp32_and_bf16_is_refused():
    assert LocalMiniLMEmbedder().model_id == LocalMiniLMEmbedder(precision="fp32").model_id
    with pytest.raises(ValueError, match="bf16 instructions"):
        LocalMiniLMEmbedder(precision="bf16")


@pytest.mark.skipif(not cpu_has_bf16(), reason=NO_BF16)
def test_bf16_minilm_gives_unit_vectors_at_fp32_cosine_under_its_own_cache_identity():
    texts = [
        "A ghost visits Scrooge on Christmas Eve.",
        "Quarterly revenue grew by ten percent.",
        " ".join(f"word{i} of a window that fills the model" for i in range(30)),
    ]
    fp32 = LocalMiniLMEmbedder(precision="fp32")
    bf16 = LocalMiniLMEmbedder(precision="bf16")
    assert bf16.model_id == f"{fp32.model_id}:bf16" and LocalMiniLMEmbedder().model_id == bf16.model_id
    a, b = fp32.embed(texts), bf16.embed(texts)
    assert b.dtype == np.float32
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert (np.einsum("ij,ij->i", a, b) > 0.999).all()  # measured >= 0.9998 on full windows
    assert not np.allclose(a, b, atol=1e-5)  # bf16 really ran
    # one compiled kernel set per padded length, not per token count: the service's memory stays flat
    lengths = {
        bf16._load()[0].preprocess([" ".join(["word"] * n)])["input_ids"].shape[1] for n in range(1, 60)
    }
    assert lengths == {16, 32, 48, 64}


def test_settings_refuse_bf16_together_with_int8():
    from pipeline.settings import Settings

    with pytest.raises(ValueError, match="exclude each other"):
        Settings(embedding_precision="bf16", embedding_quantize="int8")


class _CountingSplits(LocalMiniLMEmbedder):
    """The real model, counting the texts it is asked to split."""

    def __init__(self, piece_overlap: int = 32) -> None:
        super().__init__()
        self.piece_overlap = piece_overlap
        self.split_texts: list[str] = []

    def split(self, text):
        self.split_texts.append(text)
        return super().split(text)


def _index_pieces(tmp_path, model, texts):
    from pipeline.core import schema
    from pipeline.index.text_unit_embeddings import index_text_units
    from pipeline.io.store import NamespaceStore

    store = NamespaceStore(tmp_path / "storage", "pieces")
    units, offset = [], 0
    for i, text in enumerate(texts):
        units.append(
            {
                "id": f"u{i}",
                "text": text,
                "document_id": "d",
                "start_char": offset,
                "end_char": offset + len(text),
            }
        )
        offset += len(text) + 1
    table = pa.Table.from_pylist([{**u, "n_tokens": len(u["text"].split())} for u in units])
    docs = pa.Table.from_pylist([{"id": "d", "title": "Pieces"}])
    emb = CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite"))
    index_text_units(store, table, docs, emb)
    pieces = store.open_lance_table(schema.LANCE_TEXT_UNIT_PIECES).to_arrow().sort_by("id")
    return pieces.select(["id", "text_unit_id", "start_char", "end_char"]), pieces.column("vector")


def test_a_reindex_takes_unchanged_units_pieces_instead_of_splitting_them_again(tmp_path):
    long_a = " ".join(f"Scrooge counted coin number {i} by the fire." for i in range(80))
    long_b = " ".join(f"Marley's ghost rattled chain link {i} slowly." for i in range(70))
    model = _CountingSplits()
    first, vectors = _index_pieces(tmp_path, model, [long_a, long_b])
    assert first.num_rows > 2 and long_a in model.split_texts
    model.split_texts.clear()
    again, again_vectors = _index_pieces(tmp_path, model, [long_a, long_b, "A new short unit."])
    # only the new unit and the probe that names the split rule are split
    assert long_a not in model.split_texts and long_b not in model.split_texts
    assert "A new short unit." in model.split_texts
    kept = again.filter(pc.is_in(again.column("text_unit_id"), pa.array(["u0", "u1"])))
    assert kept.equals(first)
    # another split rule (a different overlap) cuts every unit again, into other pieces
    other = _CountingSplits(piece_overlap=8)
    changed, _ = _index_pieces(tmp_path, other, [long_a, long_b])
    assert long_a in other.split_texts and changed.column("id").to_pylist() != first.column("id").to_pylist()


def test_the_cache_closes_every_connection_it_opens(tmp_path):
    """sqlite3's `with conn:` only commits: a connection it leaves sits in a reference cycle, with the
    database, WAL and shared-memory files open, until a garbage collection (measured: 43 descriptors
    after 20 calls with the collector off)."""
    import gc
    import os

    def open_files() -> int:
        fds = os.listdir("/proc/self/fd")
        return sum(1 for fd in fds if str(tmp_path) in os.path.realpath(f"/proc/self/fd/{fd}"))

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    gc.disable()
    try:
        for i in range(20):
            cache.put_many("m", {f"h{i}": np.ones(4, dtype=np.float32)})
            assert set(cache.get_many("m", [f"h{i}"])) == {f"h{i}"}
            assert cache.count("m") == i + 1
        assert open_files() == 0
    finally:
        gc.enable()
