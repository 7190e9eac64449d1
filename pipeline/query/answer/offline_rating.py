"""The offline form of a relevance rating (0-10), shared by global search's report rating and lazy
search's unit rating: the embedding model's similarity of the question to each item, on the calibrated
usefulness scale (0-100) / 10. One scale for both keeps a rating threshold meaning the same offline as
with a model, and the same in either mode."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from pipeline.embeddings.base import Embedder

# A model's rating on the same scale, as both rating replies declare it: outside 0-10 the reply fails
# validation (and the client repairs it once).
RelevanceScore = Annotated[
    float, Field(ge=0, le=10, description="0 (unrelated) to 10 (answers the question directly)")
]


def similarity_ratings(embedder: Embedder, question: str, items: Sequence[tuple[Any, str]]) -> list[float]:
    """One rating per `(vector, text)` item, in order. An item's stored vector is used as it is; an item
    without one (None) is embedded from its text, all such in one call."""
    if not items:
        return []
    query = embedder.embed([question])[0]
    missing = [text for vector, text in items if vector is None]
    fresh = iter(embedder.embed(missing)) if missing else iter(())
    ratings = []
    for vector, _ in items:
        v = np.asarray(vector if vector is not None else next(fresh), dtype=np.float32)
        ratings.append(embedder.calibration.usefulness(float(v @ query)) / 10)
    return ratings
