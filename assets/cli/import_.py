"""`pipeline import graphrag`: a Microsoft GraphRAG output folder as a namespace, through Dagster like
`index` (`assets.import_launch`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def cmd_import_graphrag(args: argparse.Namespace) -> int:
    """A Microsoft GraphRAG output folder as a namespace, through Dagster like `index`."""
    from pipeline.interop.ms_graphrag_read import GraphRAGImportError, read_output

    try:
        read_output(args.source)  # a bad folder is named here, before Dagster loads
    except GraphRAGImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from assets.import_launch import run_import

    print(f"importing {args.source} into namespace {args.namespace!r}", flush=True)
    result = run_import(args.namespace, args.source, on_event=lambda m: print("  " + m, flush=True))
    print(f"\nrun {result.run_id}: {'SUCCESS' if result.success else 'FAILED'}")
    for step in result.steps:
        shown = {
            k: v for k, v in step.metadata.items() if isinstance(v, int | float | str) and len(str(v)) < 80
        }
        print(f"  {step.asset}: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    for message in result.failures:
        print(f"  error: {message}", file=sys.stderr)
    return 0 if result.success else 1


def add_import_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("import", help="import an index another tool wrote").add_subparsers(
        dest="import_kind", required=True
    )
    p = p.add_parser("graphrag", help="a Microsoft GraphRAG 2.x/3.x output folder, with no LLM call")
    p.add_argument("--from", dest="source", required=True, help="the output folder `graphrag index` wrote")
    p.add_argument("--namespace", required=True, type=namespace)
    p.set_defaults(func=cmd_import_graphrag)
