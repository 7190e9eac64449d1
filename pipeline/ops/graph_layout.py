"""Where each node of a drawn graph goes, and how big it is: sizes bounded and by degree, positions from a
seeded spring layout pushed apart until no two discs overlap.

The browser's physics (vis-network) settles differently on every load and, on a dense community, leaves
discs heaped on one another; laid out here the picture is the same each time, overlap-free by
construction, and the page only draws it. Above `MAX_LAID_OUT` nodes the pairwise separation would cost
more memory than a page is worth, so positions are left to the page's physics (with its overlap
avoidance on).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

MIN_SIZE, MAX_SIZE = 8.0, 30.0  # vis-network "dot" radius, in canvas pixels
GAP = 6.0  # free space kept between two discs
LABEL_PX = 14  # the labels' font size (graph_view.VIS_OPTIONS)
MAX_LABEL_ROOM = 60.0  # a long label may still overhang its neighbour's; not the whole picture's spacing
MAX_LAID_OUT = 1500
_SEPARATION_ROUNDS = 400


def node_sizes(degrees: Mapping[str, int]) -> dict[str, float]:
    """Radius per node: MIN_SIZE for an isolated node up to MAX_SIZE for the best connected one, by the
    square root of degree, so that a disc's area (what the eye compares) grows with its degree."""
    top = max((max(d, 0) for d in degrees.values()), default=0)
    if top == 0:
        return {n: MIN_SIZE for n in degrees}
    span = MAX_SIZE - MIN_SIZE
    return {n: round(MIN_SIZE + span * math.sqrt(max(d, 0) / top), 2) for n, d in degrees.items()}


def room(size: float, label: str) -> float:
    """The radius a node keeps free around its centre: its disc, or, when wider, about half its label
    (drawn under the disc at LABEL_PX), so that neighbouring labels do not run into one another."""
    return max(size, min(len(label) * LABEL_PX * 0.3, MAX_LABEL_ROOM))


def layout(
    nodes: Sequence[str],
    edges: Iterable[tuple[str, str]],
    sizes: Mapping[str, float],
    seed: int = 0,
    labels: Mapping[str, str] | None = None,
) -> dict[str, tuple[float, float]] | None:
    """(x, y) per node, no two discs (radius `sizes[n]`, or the room its label needs) closer than GAP;
    None above MAX_LAID_OUT nodes."""
    import networkx as nx

    n = len(nodes)
    if n == 0 or n > MAX_LAID_OUT:
        return None
    graph = nx.Graph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((a, b) for a, b in edges if a in sizes and b in sizes and a != b)
    start = nx.spring_layout(graph, seed=seed) if n > 1 else {nodes[0]: np.zeros(2)}
    radius = np.array([room(sizes[v], (labels or {}).get(v, "")) for v in nodes], dtype=float)
    # Scale the unit layout so the discs would fill about half of the drawing: room to separate, and
    # not so sparse that fitting it into a view shrinks the labels past reading.
    area = float(np.sum((2 * radius + GAP) ** 2))
    points = np.array([start[v] for v in nodes], dtype=float) * math.sqrt(2 * area) / 2
    points = separate(points, radius)
    # Separation can leave a few pairs short in a dense cluster; spreading the whole picture a little
    # only lengthens distances, so a few rounds of it always finish the job.
    for _ in range(20):
        if not _short_pairs(points, radius):
            break
        points = separate(points * 1.2, radius)
    return {v: (round(float(x), 1), round(float(y), 1)) for v, (x, y) in zip(nodes, points, strict=True)}


def separate(points: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Push overlapping discs apart along the line between their centres (coincident ones along a fixed
    direction per pair) until every pair is GAP apart; deterministic."""
    p = points.copy()
    n = len(p)
    need = radius[:, None] + radius[None, :] + GAP
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    # Coincident centres get a direction from the pair's indices, so the result does not depend on luck.
    angle = (np.arange(n)[:, None] * 7.0 + np.arange(n)[None, :] * 13.0) % (2 * math.pi)
    fallback = np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    for _ in range(_SEPARATION_ROUNDS):
        delta = p[:, None, :] - p[None, :, :]
        dist = np.linalg.norm(delta, axis=-1)
        short = (need - dist > 1e-6) & upper
        if not short.any():
            break
        unit = np.where(dist[..., None] > 1e-9, delta / np.maximum(dist, 1e-9)[..., None], fallback)
        # Each pair moves half its shortfall apiece (a little more, so rounding cannot leave a sliver).
        push = np.where(short, (need - dist) * 0.51, 0.0)[..., None] * unit
        p += push.sum(axis=1) - push.sum(axis=0)
    return p


def _short_pairs(p: np.ndarray, radius: np.ndarray) -> bool:
    dist = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1)
    short = dist < radius[:, None] + radius[None, :] + GAP - 0.4
    np.fill_diagonal(short, False)
    return bool(short.any())
