"""`pipeline show`: a cited page of a parsed document, the cited span marked (`pipeline.query.page_view`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from pipeline.settings import load_settings


def cmd_show(args: argparse.Namespace) -> int:
    from pipeline.io.store import NamespaceStore
    from pipeline.query.page_view import PageViewError, page_view, parse_span

    try:
        span = parse_span(args.span) if args.span else None
        store = NamespaceStore.from_settings(load_settings(), args.namespace)
        view = page_view(store, args.document, args.page, span)
    except PageViewError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(view.render(), end="")
    return 0


def add_show_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("show", help="a page of a parsed document (PDF page, slide), a cited span marked")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument("--document", required=True, help="the document's title (file name) or id")
    p.add_argument("--page", required=True, type=int, help="1-based page number, as a PDF viewer counts")
    p.add_argument("--span", help="START:END document characters to mark (a citation's offsets)")
    p.set_defaults(func=cmd_show)
