"""An embedder behind the persistent cache: unchanged text is never embedded twice."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Sequence

import numpy as np

from pipeline.caches.base import VectorCache
from pipeline.core.kill_points import kill_point
from pipeline.embeddings.base import Calibration, Embedder, Piece, ProgressFn, text_hash

log = logging.getLogger(__name__)

# A text long enough for any model window to cut it in several pieces (`CachedEmbedder.split_tag`).
_SPLIT_PROBE = " ".join(f"probe{i} ünïcode, 12.{i}%; " for i in range(2000))


class CachedEmbedder:
    """Wraps an Embedder with the persistent cache, batching and progress; counts hits and misses."""

    def __init__(
        self,
        embedder: Embedder,
        cache: VectorCache,
        batch_size: int = 512,
        level_overrides: dict[str, float] | None = None,
    ) -> None:
        self.embedder = embedder
        # the settings' similarity levels, over what an index measured (`pipeline.embeddings.levels`)
        self.level_overrides = dict(level_overrides or {})
        self.cache = cache
        self.batch_size = batch_size
        self.cache_hits = 0
        self.computed = 0

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def model_name(self) -> str:
        return getattr(self.embedder, "model_name", None) or self.embedder.model_id

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def calibration(self) -> Calibration:
        return self.embedder.calibration

    def _embed_exact(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        """Vectors for texts that fit the model window, from the cache where possible.

        The texts the cache lacks go to the model longest first, in calls of `batch_size` texts: a model
        pads each of its batches to its longest text, so batches of similar lengths waste no work (the
        sentence-transformers rule, applied across the whole set instead of within each call). Each
        call's vectors are persisted before the next: a crash loses one call's work at most."""
        hashes = [text_hash(t) for t in texts]
        unique = list(dict.fromkeys(hashes))
        cached = self.cache.get_many(self.model_id, unique)
        text_of = dict(zip(hashes, texts, strict=True))
        missing = sorted((h for h in unique if h not in cached), key=lambda h: (-len(text_of[h]), h))
        self.cache_hits += len(unique) - len(missing)
        started = time.monotonic()
        for i in range(0, len(missing), self.batch_size):
            batch = missing[i : i + self.batch_size]
            fresh = dict(zip(batch, self.embedder.embed([text_of[h] for h in batch]), strict=True))
            self.cache.put_many(self.model_id, fresh)
            kill_point("embeddings")  # a test hook (kill_points.py): this batch stored, the next not
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

    @functools.cached_property
    def split_tag(self) -> str:
        """What the embedder's `split` rule is: its model and the spans it gives a fixed long text (a
        changed window, overlap or tokenizer changes them). Spans stored under the same tag can be
        taken again instead of tokenizing the text anew."""
        spans = json.dumps(self.embedder.split(_SPLIT_PROBE))
        return f"{self.model_id}|{hashlib.sha256(spans.encode()).hexdigest()[:16]}"

    def embed_with_pieces(
        self,
        texts: Sequence[str],
        progress: ProgressFn | None = None,
        headers: Sequence[str | None] | None = None,
        spans: Sequence[list[tuple[int, int]] | None] | None = None,
    ) -> tuple[np.ndarray, list[Piece]]:
        """One vector per text plus the pieces it was built from.

        A text longer than the model window is embedded in overlapping pieces; its vector is the
        re-normalised mean of theirs (GraphRAG's rule for over-long texts). The pieces themselves are
        returned so that a search can match a sentence inside a long chunk instead of its diluted mean.
        `headers[i]`, when given, is embedded on a line before each piece of text i (a piece's offsets
        and text stay those of the text alone). `spans[i]`, when given, is text i's split as an earlier
        run made it under the same `split_tag` (tokenizing every unit of the 11 MB scale corpus to
        split it again was 10-15 s of a 1% re-index).
        """
        if headers is not None and len(headers) != len(texts):
            raise ValueError(f"{len(headers)} headers for {len(texts)} texts")
        if spans is not None and len(spans) != len(texts):
            raise ValueError(f"{len(spans)} splits for {len(texts)} texts")
        pieces: list[Piece] = []
        for i, text in enumerate(texts):
            known = spans[i] if spans is not None else None
            for start, end in known if known else self.embedder.split(text):
                pieces.append(Piece(i, start, end, text[start:end]))
        embedded = [
            f"{headers[p.owner]}\n{p.text}" if headers is not None and headers[p.owner] else p.text
            for p in pieces
        ]
        vectors = self._embed_exact(embedded, progress)
        for piece, vector in zip(pieces, vectors, strict=True):
            piece.vector = vector
        if len(pieces) == len(texts):
            return vectors, pieces
        summed = np.zeros((len(texts), self.dimension), dtype=np.float32)
        np.add.at(summed, np.asarray([p.owner for p in pieces], dtype=np.int64), vectors)
        return summed / np.maximum(np.linalg.norm(summed, axis=1, keepdims=True), 1e-12), pieces

    def embed(self, texts: Sequence[str], progress: ProgressFn | None = None) -> np.ndarray:
        return self.embed_with_pieces(texts, progress)[0]
