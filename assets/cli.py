"""Command line: `pipeline index|status|query ...` (also `python -m assets ...`).

It lives beside the Dagster layer because `index` hands the work to it (`assets.launch`), so that a
CLI run is the same materialization the UI performs; the other commands call `pipeline` directly.
Dagster is imported only when `index` runs, which keeps the query commands quick to start.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from types import ModuleType

from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.settings import ConfigError, load_settings


def _namespace(value: str) -> str:
    try:
        return validate_namespace(value)
    except InvalidNamespaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_index_all(launch: ModuleType) -> int:
    """Backfill: every folder under the input root and every registered namespace, one run each."""
    started = time.monotonic()
    results, skipped = launch.backfill_namespaces(on_event=lambda m: print("  " + m, flush=True))
    for ns in skipped:
        print(f"  skipped {ns!r}: no folder under the input root (re-index it with --input)")
    failed = [ns for ns, r in results.items() if not r.success]
    for ns, r in results.items():
        print(f"{ns}: run {r.run_id} {'SUCCESS' if r.success else 'FAILED'}")
        for message in r.failures:
            print(f"  error: {message}", file=sys.stderr)
    print(f"\n{len(results)} namespaces, {len(failed)} failed, in {time.monotonic() - started:.1f}s")
    return 1 if failed else 0


def cmd_index_estimate(args: argparse.Namespace) -> int:
    """What the index run would send to the model, counted without sending it (no Dagster)."""
    from pipeline.index.estimate import estimate_index

    if args.all_namespaces:
        print("error: --estimate takes one --namespace", file=sys.stderr)
        return 2
    estimate = estimate_index(args.namespace, load_settings(), args.input)
    print(json.dumps(estimate.to_dict(), indent=2) if args.json else estimate.render())
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    if args.estimate:
        return cmd_index_estimate(args)
    from assets import launch  # dagster loads only for this command

    if args.all_namespaces:
        return cmd_index_all(launch)
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
    store = NamespaceStore.from_settings(settings, args.namespace)
    tables = store.tables()
    if not tables:
        print(f"namespace {args.namespace!r} has no tables under {store.uri} (run `index` first)")
        return 1
    print(f"namespace {args.namespace!r} at {store.uri}")
    print(f"  {'table':<28} {'kind':<8} {'rows':>10}  materialized (UTC)")
    for t in tables:
        print(f"  {t.name:<28} {t.kind:<8} {t.rows:>10}  {t.modified:%Y-%m-%d %H:%M:%S}")
    return 0


def cmd_query_vector(args: argparse.Namespace) -> int:
    from pipeline.runtime import cached_embedder
    from pipeline.vector_tool import create_vector_query_tool
    from pipeline.vector_tool.namespace_stores import namespace_store

    settings = load_settings()
    store = namespace_store(settings, args.namespace, args.store)
    tool = create_vector_query_tool("text_units", cached_embedder(settings), store=store, enable_filter=True)
    out = tool.execute({"query_text": args.query, "top_k": args.top_k, "filter": args.filter})
    if "error" in out:
        if str(out["error"]).startswith(TableNotFoundError.__name__):
            return _not_ready(str(out["error"]).split(": ", 1)[-1])
        print(f"error: {out['error']}", file=sys.stderr)
        return 2
    hits = [{"id": s["id"], "score": s["score"], **s["metadata"]} for s in out["sources"]]
    if args.json:
        print(json.dumps(hits, indent=2, default=str))
        return 0
    for rank, hit in enumerate(hits, start=1):
        snippet = " ".join(str(hit.get("text", "")).split())[:200]
        print(
            f"{rank}. score={hit['score']:.3f}  {hit.get('document_title')} "
            f"[{hit.get('start_char')}:{hit.get('end_char')}]  id={hit['id'][:12]}\n   {snippet}"
        )
    return 0


def _filter_pair(value: str) -> tuple[str, object]:
    key, sep, raw = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    try:
        return key, json.loads(raw)  # numbers, true/false, null, "quoted"
    except json.JSONDecodeError:
        return key, raw


def cmd_query_chunks(args: argparse.Namespace) -> int:
    from pipeline.chunk_graph import ChunkGraphError
    from pipeline.chunk_graph.indexing import load_namespace_chunk_graph
    from pipeline.runtime import cached_embedder

    settings = load_settings()
    store = NamespaceStore.from_settings(settings, args.namespace)
    embedder = cached_embedder(settings)
    try:
        graph = load_namespace_chunk_graph(store, dimension=embedder.dimension)
        hits = graph.query(
            embedder.embed([args.query])[0],
            top_k=args.top_k,
            random_walk_steps=args.steps,
            restart_prob=args.restart_prob,
            filter=dict(args.filter) or None,
            seed=args.seed,
            method=args.method,
        )
    except ChunkGraphError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], indent=2, default=str))
        return 0
    for rank, hit in enumerate(hits, start=1):
        meta = hit.metadata
        snippet = " ".join(hit.content.split())[:200]
        print(
            f"{rank}. score={hit.score:.4f}  {meta.get('document_title')} "
            f"[{meta.get('start_char')}:{meta.get('end_char')}]  id={hit.id[:12]}\n   {snippet}"
        )
    return 0


def cmd_query_global(args: argparse.Namespace) -> int:
    from pipeline.query.global_context import GlobalContextError
    from pipeline.query.global_search import GlobalSearchConfig, global_search

    config = GlobalSearchConfig.from_settings(
        load_settings(), level=args.level, seed=args.seed, response_type=args.response_type
    )
    try:
        result = global_search(args.namespace, args.query, config=config)
    except GlobalContextError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    print(result.answer)
    cited = ", ".join(str(c) for c in result.cited_communities)
    print(f"\n[status: {result.status}; batches: {result.batches}; cited communities: {cited or '-'}]")
    if result.reason:
        print(f"[{result.reason}]")
    return 0 if result.status in ("completed", "partial", "no_results") else 1


def cmd_query_local(args: argparse.Namespace) -> int:
    from pipeline.query.local_search import LocalSearchError, local_search

    try:
        result = local_search(args.namespace, args.query, top_k=args.top_k, community_level=args.level)
    except LocalSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    print(result.answer)
    print("\nCommunities:")
    for c in result.communities:
        matched = f" (matched: {', '.join(c['matched_entities'])})" if c["matched_entities"] else ""
        print(f"  [{c['id']}] level {c['level']}: {c['title']}{matched}")
    print("Evidence:")
    for ev in result.evidence[: args.show_evidence]:
        snippet = " ".join(ev["text"].split())[:160]
        print(
            f"  [{ev['ref']}] {ev['kind']} {ev['document_title']} [{ev['start_char']}:{ev['end_char']}] {snippet}"
        )
    if result.status != "completed":
        print(f"[status: {result.status}; {result.reason}]")
    return 0 if result.status in ("completed", "no_results") else 1


def cmd_communities(args: argparse.Namespace) -> int:
    from pipeline.core import schema
    from pipeline.ops.communities import top_communities

    settings = load_settings()
    store = NamespaceStore.from_settings(settings, args.namespace)
    table = schema.COMMUNITY_REPORTS if store.has_table(schema.COMMUNITY_REPORTS) else schema.COMMUNITIES
    rows = top_communities(store.read_table(table).to_pylist(), args.level)
    print(f"namespace {args.namespace!r}: {len(rows)} communities at level {args.level} (from {table})")
    print(f"  {'community':>9} {'size':>6} {'rank':>5}  title")
    for r in rows[: args.limit]:
        rank = f"{r['rank']:.1f}" if r.get("rank") is not None else "-"
        print(f"  {r['community']:>9} {r['size']:>6} {rank:>5}  {r['title']}")
    if len(rows) > args.limit:
        print(f"  ... and {len(rows) - args.limit} more")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipeline", description="GraphRAG indexing and query on Dagster")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="materialize a namespace's indexing assets through Dagster")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--namespace", type=_namespace)
    which.add_argument(
        "--all-namespaces",
        action="store_true",
        help="backfill: re-index every folder under the input root and every registered namespace",
    )
    p.add_argument(
        "--input", help="folder holding the namespace's documents (default <input_root>/<namespace>/)"
    )
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print the LLM calls, tokens and cost the run would have, per stage, without calling the "
        "model (cached calls cost nothing); nothing is indexed",
    )
    p.add_argument("--json", action="store_true", help="with --estimate: the estimate as JSON")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("status", help="a namespace's tables, row counts and materialization times")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("communities", help="a level's community titles and sizes, highest rank first")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--level", type=int, default=0, help="0 = top level")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(func=cmd_communities)

    q = sub.add_parser("query", help="query an index").add_subparsers(dest="query_kind", required=True)
    p = q.add_parser("vector", help="vector search over the namespace's text units")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument(
        "--store",
        choices=("lancedb", "pgvector", "chroma"),
        default="lancedb",
        help="pgvector (PIPELINE_PGVECTOR_DSN) and chroma get the text units copied from LanceDB first",
    )
    p.add_argument("--top-k", default="5", help="results to return (a number; invalid gives 10)")
    p.add_argument(
        "--filter", default=None, help='metadata filter as JSON, e.g. \'{"document_title": "a.txt"}\''
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_vector)

    p = q.add_parser("chunks", help="chunk-graph search: random walk with restart from the nearest chunks")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--steps", type=int, default=100, help="random walk steps per seed")
    p.add_argument("--restart-prob", type=float, default=0.15)
    p.add_argument("--seed", type=int, default=None, help="random seed (default: a fixed seed)")
    p.add_argument("--method", choices=("walk", "ppr"), default="walk", help="ppr: exact limit of the walks")
    p.add_argument(
        "--filter",
        type=_filter_pair,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="metadata equality filter, e.g. document_title=a.txt (repeatable)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_chunks)

    p = q.add_parser("global", help="map-reduce over community reports: corpus-wide questions")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--level", type=int, default=None, help="community level (default: leaf communities)")
    p.add_argument("--seed", type=int, default=0, help="shuffle seed for the report batches")
    p.add_argument(
        "--response-type",
        default="multiple paragraphs",
        help='length and form of the answer, e.g. "a single paragraph" (default: multiple paragraphs)',
    )
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_global)

    p = q.add_parser("local", help="entity/graph/vector retrieval with evidence cited to document offsets")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--top-k", type=int, default=8, help="communities to keep")
    p.add_argument("--level", type=int, default=None, help="community level (default: leaf communities)")
    p.add_argument("--show-evidence", type=int, default=8, help="evidence items to print")
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_local)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return args.func(args)
    except TableNotFoundError as exc:
        return _not_ready(str(exc))
    except (ConfigError, InvalidNamespaceError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


EXIT_NOT_READY = 3


def _not_ready(reason: str) -> int:
    """A query on a namespace without the tables it reads: the same status the HTTP API and MCP give."""
    print(f"[status: index_not_ready; {reason}]")
    return EXIT_NOT_READY


if __name__ == "__main__":
    sys.exit(main())
