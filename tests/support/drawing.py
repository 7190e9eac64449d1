"""What a drawn graph is checked against: the pairs of nodes whose discs overlap."""

from __future__ import annotations

import math
from collections.abc import Mapping

from pipeline.ops.graph_layout import GAP


def overlaps(
    positions: Mapping[str, tuple[float, float]], sizes: Mapping[str, float]
) -> list[tuple[str, str]]:
    """The pairs of nodes whose discs are closer than GAP (a laid-out graph has none)."""
    names = list(positions)
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            dx, dy = positions[a][0] - positions[b][0], positions[a][1] - positions[b][1]
            if math.hypot(dx, dy) < sizes[a] + sizes[b] + GAP - 0.5:  # 0.5: the positions' rounding
                out.append((a, b))
    return out
