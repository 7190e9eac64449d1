"""`pipeline query lazy` and `pipeline query auto`: lazy search (with `--estimate`) and the router, with the
same exits as the other query commands (`assets.cli.query`): 0 on an answer, 1 on a cancelled query,
2 on a bad request."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from assets.cli.query import ESTIMATE_HELP, _citations, answer_or_exit
from assets.cli.query_options import add_options
from pipeline.query.requests import AutoOptions, LazyOptions


def _show_lazy(result: Any) -> None:
    print(result.answer)
    _citations(result.citations, result.quotes)
    u = result.usage
    print(
        f"\n[status: {result.status}; units tested {result.units_tested}, relevant {result.units_relevant}; "
        f"model calls: expand {u['expand_calls']}, rate {u['rate_calls']}, answer {u['answer_calls']} "
        f"(at most {u['max_calls']})]"
    )
    if result.reason:
        print(f"[{result.reason}]")


def cmd_query_lazy(args: argparse.Namespace) -> int:
    from pipeline.api import lazy_search
    from pipeline.query.lazy.search import LazySearchConfig, LazySearchError

    result = answer_or_exit(args, "lazy", LazyOptions, LazySearchConfig, lazy_search, LazySearchError)
    if isinstance(result, int):
        return result
    _show_lazy(result)
    return 0 if result.status in ("completed", "partial", "no_results") else 1


def cmd_query_auto(args: argparse.Namespace) -> int:
    from pipeline.api import auto_search
    from pipeline.query.auto.search import AutoSearchConfig

    result = answer_or_exit(args, "auto", AutoOptions, AutoSearchConfig, auto_search)
    if isinstance(result, int):
        return result
    print(result.answer)
    _citations([], result.result.get("quotes") or [])  # the routed mode's quoted sentences, when paged
    print(f"\n[route: {result.route} ({result.router}); {result.reason}]")
    print(f"[status: {result.status}]")
    if result.result.get("reason"):
        print(f"[{result.result['reason']}]")
    return 0 if result.status in ("completed", "partial", "no_results") else 1


def add_lazy_parsers(q: Any, namespace: Callable[[str], str]) -> None:
    p = q.add_parser(
        "lazy", help="lazy search: relevance tests of passages within a budget, no reports needed"
    )
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, LazyOptions)
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("--estimate", action="store_true", help=ESTIMATE_HELP)
    p.add_argument("query")
    p.set_defaults(func=cmd_query_lazy)

    p = q.add_parser("auto", help="route the question to basic, local, global, drift or lazy search")
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, AutoOptions)
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_auto)
