"""`pipeline graph`: the namespace's entity graph as one self-contained HTML page."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.settings import load_settings


def cmd_graph(args: argparse.Namespace) -> int:
    """The namespace's graph as one self-contained HTML page (`pipeline.ops.graph_view`)."""
    from pipeline.core import schema
    from pipeline.ops.graph_view import graph_data, graph_html

    store = NamespaceStore.from_settings(load_settings(), args.namespace)
    ranks = None
    if store.has_table(schema.COMMUNITY_REPORTS):
        reports = store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "rank"]).to_pylist()
        ranks = {r["community"]: float(r["rank"] or 0.0) for r in reports}
    data = graph_data(
        store.read_table(schema.ENTITIES),
        store.read_table(schema.RELATIONSHIPS),
        store.read_table(schema.COMMUNITIES),
        ranks,
    )
    page = graph_html(data, f"{args.namespace}: entity graph").encode("utf-8")
    if args.out:
        with open(args.out, "wb") as out:
            out.write(page)
        where = args.out
    else:
        store.write_bytes(schema.GRAPH_VIEW, page)
        where = str(store.location(schema.GRAPH_VIEW))
    print(f"{len(data['nodes'])} entities, {len(data['edges'])} relationships -> {where}")
    return 0


def add_graph_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("graph", help="the entity graph as a self-contained HTML page (opens offline)")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument("--out", help="file to write (default: graph.html in the namespace's folder)")
    p.set_defaults(func=cmd_graph)
