"""`pipeline graph`: the namespace's entity graph as one self-contained HTML page."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pipeline.io.store import NamespaceStore
from pipeline.settings import load_settings


def cmd_graph(args: argparse.Namespace) -> int:
    """The namespace's graph as one self-contained HTML page (`pipeline.index.graph_view`)."""
    from pipeline.index.graph_view import write_graph_view

    store = NamespaceStore.from_settings(load_settings(), args.namespace)
    view = write_graph_view(store, args.out or None)
    print(f"{view.nodes} entities, {view.edges} relationships -> {view.where}")
    return 0


def add_graph_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("graph", help="the entity graph as a self-contained HTML page (opens offline)")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument("--out", help="file to write (default: graph.html in the namespace's folder)")
    p.set_defaults(func=cmd_graph)
