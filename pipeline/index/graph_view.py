"""graph.html: the one writer of a namespace's graph page (`pipeline.ops.graph_view` builds it), for the
communities stage at index time and for `pipeline graph` on demand."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.ops.graph_view import graph_data, graph_html


@dataclass(frozen=True)
class GraphView:
    where: str  # the file written: `out`, or graph.html's location in the namespace
    nodes: int
    edges: int


def write_graph_view(
    store: NamespaceStore,
    out: str | Path | None = None,
    *,
    built: tuple[pa.Table, pa.Table, pa.Table] | None = None,
) -> GraphView:
    """Write the namespace's graph page to `out`, or to its graph.html when `out` is None.

    `built` is the entities, relationships and communities the communities stage has just made: they
    are drawn unranked, since reports left by an earlier run name an older partition's communities.
    Without it the tables are read from the store, and the community reports rank the communities
    when the namespace has them."""
    if built is not None:
        entities, relationships, communities = built
        ranks = None
    else:
        entities = store.read_table(schema.ENTITIES)
        relationships = store.read_table(schema.RELATIONSHIPS)
        communities = store.read_table(schema.COMMUNITIES)
        ranks = _report_ranks(store)
    data = graph_data(entities, relationships, communities, ranks)
    page = graph_html(data, f"{store.namespace}: entity graph").encode("utf-8")
    if out is not None:
        Path(out).write_bytes(page)
        where = str(out)
    else:
        store.write_bytes(schema.GRAPH_VIEW, page)
        where = str(store.location(schema.GRAPH_VIEW))
    return GraphView(where=where, nodes=len(data["nodes"]), edges=len(data["edges"]))


def _report_ranks(store: NamespaceStore) -> dict[int, float] | None:
    if not store.has_table(schema.COMMUNITY_REPORTS):
        return None
    reports = store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "rank"]).to_pylist()
    return {r["community"]: float(r["rank"] or 0.0) for r in reports}
