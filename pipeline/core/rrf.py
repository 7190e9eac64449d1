"""Reciprocal Rank Fusion: combine rankings whose scores are not comparable (cosine, Jaccard, weights)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hashable]], k: int = 60
) -> list[tuple[Hashable, float]]:
    """score(x) = Σ over rankings of 1 / (k + rank + 1), rank 0-based; best first, ties by first appearance."""
    if k < 0:
        raise ValueError(f"RRF k must be non-negative, got {k}")
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        seen: set[Hashable] = set()
        for rank, item in enumerate(ranking):
            if item in seen:  # an item counts once per ranking, at its best rank
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank + 1)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))
