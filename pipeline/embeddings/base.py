"""What every embedder is: texts in, L2-normalised float32 vectors out, plus the model's calibration.

Similarity thresholds belong to the model that makes the vectors (MiniLM's cosines sit lower than
OpenAI's), so each embedder carries its `Calibration` and no stage hard-codes a cosine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Calibration:
    """Cosine levels of one embedding model, each chosen once for every corpus (docs/concepts.md has the table).

    - `related`: two texts this similar are about the same thing (chunk-graph edges).
    - `relevant`: a passage or report this similar to a question is worth showing (local-search floor).
    - `useless` / `useful`: the offline usefulness scale maps cosine `useless` to 0 and `useful` to 100.
    - `entity`: a question this similar to an entity's vector (of its title) is about that entity
      (local search's semantic entity channel).
    """

    related: float
    relevant: float
    useless: float
    useful: float
    entity: float

    def usefulness(self, cosine: float) -> float:
        """A cosine on the 0-100 usefulness scale of map answers (0 below `useless`)."""
        if cosine < self.useless:
            return 0.0
        span = max(self.useful - self.useless, 1e-6)
        return round(min(1.0, (cosine - self.useless) / span) * 100, 1)


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

    @property
    def calibration(self) -> Calibration:
        """The model's similarity levels."""
        ...


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


class EmbedderConfigError(ValueError):
    pass
