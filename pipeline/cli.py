"""Command line: `python -m pipeline index|status|query ...` (also installed as `pipeline`).

The `index` command hands the work to the Dagster layer (`assets.launch`) so that a CLI run is the
same materialization the UI performs; it is imported only when that command runs, so the pipeline
package itself never imports dagster.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time

from pipeline.namespace import InvalidNamespaceError, validate_namespace
from pipeline.settings import ConfigError, load_settings
from pipeline.store import NamespaceStore, TableNotFoundError


def _namespace(value: str) -> str:
    try:
        return validate_namespace(value)
    except InvalidNamespaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_index(args: argparse.Namespace) -> int:
    launch = importlib.import_module("assets.launch")
    started = time.monotonic()
    print(
        f"indexing namespace {args.namespace!r}" + (f" from {args.input}" if args.input else ""), flush=True
    )
    result = launch.run_index(
        args.namespace, input_dir=args.input, on_event=lambda m: print("  " + m, flush=True)
    )
    print(
        f"\nrun {result.run_id}: {'SUCCESS' if result.success else 'FAILED'} in {time.monotonic() - started:.1f}s"
    )
    for step in result.steps:
        shown = {
            k: v for k, v in step.metadata.items() if isinstance(v, int | float | str) and len(str(v)) < 80
        }
        print(f"  {step.asset}: " + ", ".join(f"{k}={v}" for k, v in shown.items()))
    if not result.success:
        for message in result.failures:
            print(f"  error: {message}", file=sys.stderr)
    return 0 if result.success else 1


def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    store = NamespaceStore(settings.storage_root, args.namespace)
    tables = store.tables()
    if not tables:
        print(f"namespace {args.namespace!r} has no tables under {store.root} (run `index` first)")
        return 1
    print(f"namespace {args.namespace!r} at {store.root}")
    print(f"  {'table':<28} {'kind':<8} {'rows':>10}  materialized (UTC)")
    for t in tables:
        print(f"  {t.name:<28} {t.kind:<8} {t.rows:>10}  {t.modified:%Y-%m-%d %H:%M:%S}")
    return 0


def cmd_query_vector(args: argparse.Namespace) -> int:
    from pipeline.embedding import CachedEmbedder, EmbeddingCache, make_embedder
    from pipeline.store import cache_dir
    from pipeline.vectors import vector_search

    settings = load_settings()
    store = NamespaceStore(settings.storage_root, args.namespace)
    embedder = CachedEmbedder(
        make_embedder(settings), EmbeddingCache(cache_dir(settings.storage_root) / "embeddings.sqlite")
    )
    hits = vector_search(store, embedder, args.query, k=args.top_k)
    if args.json:
        print(json.dumps(hits, indent=2, default=str))
        return 0
    for rank, hit in enumerate(hits, start=1):
        snippet = " ".join(hit["text"].split())[:200]
        print(
            f"{rank}. score={hit['score']:.3f}  {hit['document_title']} "
            f"[{hit['start_char']}:{hit['end_char']}]  id={hit['id'][:12]}\n   {snippet}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipeline", description="GraphRAG indexing and query on Dagster")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="materialize a namespace's indexing assets through Dagster")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument(
        "--input", help="folder holding the namespace's documents (default <input_root>/<namespace>/)"
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("status", help="a namespace's tables, row counts and materialization times")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.set_defaults(func=cmd_status)

    q = sub.add_parser("query", help="query an index").add_subparsers(dest="query_kind", required=True)
    p = q.add_parser("vector", help="vector search over the namespace's text units")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_vector)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return args.func(args)
    except (ConfigError, InvalidNamespaceError, TableNotFoundError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
