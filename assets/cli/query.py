"""`pipeline query <mode>`: the query commands of the CLI, one per mode (vector, chunks, global, local,
drift, basic). Each calls `pipeline` directly (no Dagster), prints the answer with its status and
citations (or the whole result with --json), and exits 0 on an answer, 1 on a cancelled or failed query,
2 on a bad request (a blank question included) and 3 when the namespace is not indexed yet or a table
of it is damaged (`pipeline.io.damage`). `--estimate` on the modes that call a
model prints what one question can cost without sending anything (`pipeline.query.estimate`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from assets.cli.exits import damaged, not_ready
from assets.cli.hits import add_matches, print_hits
from assets.cli.query_options import add_options, options_from
from pipeline.core.schema import LANCE_TEXT_UNITS
from pipeline.io.repair import diagnose
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query.requests import (
    BasicOptions,
    ChunkOptions,
    DriftOptions,
    GlobalOptions,
    LocalOptions,
    QueryOptions,
    VectorOptions,
)
from pipeline.settings import load_settings

BLANK_QUESTION = "the question is blank: it must contain a non-blank character"


@contextmanager
def tool_log_quiet(verbose: bool) -> Iterator[None]:
    """The vector tool logs a failure with its traceback (for a service's log); the CLI prints the
    tool's reason on one line instead, and `-v` shows the log."""
    tool_log = logging.getLogger("pipeline.vector_tool.tool")
    before = tool_log.disabled
    tool_log.disabled = not verbose
    try:
        yield
    finally:
        tool_log.disabled = before


def cmd_query_vector(args: argparse.Namespace) -> int:
    from pipeline.runtime import cached_embedder
    from pipeline.vector_tool import create_vector_query_tool
    from pipeline.vector_tool.namespace_stores import namespace_store
    from pipeline.vector_tool.options import DEFAULT_TOP_K

    options = _options(args, VectorOptions)
    if options is None:
        return 2
    settings = load_settings()
    lance = NamespaceStore.from_settings(settings, args.namespace)
    if not lance.has_lance_table(LANCE_TEXT_UNITS):  # every store's rows come from this table
        raise TableNotFoundError(
            f"namespace {args.namespace!r} has no LanceDB table {LANCE_TEXT_UNITS!r} yet; "
            "materialize the embedding asset first"
        )
    store = namespace_store(settings, args.namespace, args.store)
    tool_embedder = cached_embedder(settings)
    tool = create_vector_query_tool("text_units", tool_embedder, store=store, enable_filter=True)
    with tool_log_quiet(getattr(args, "verbose", False)):
        out = tool.execute(
            {"query_text": args.query, "top_k": options.top_k or DEFAULT_TOP_K, "filter": options.filter}
        )
    if "error" in out:
        kind, _, reason = str(out["error"]).partition(": ")
        if kind == TableNotFoundError.__name__:
            return not_ready(reason)
        if kind != "FilterError" and (found := diagnose(lance)) is not None:
            return damaged(found)
        print(f"error: {reason or kind}", file=sys.stderr)
        return 2
    hits = [{"id": s["id"], "score": s["score"], **s["metadata"]} for s in out["sources"]]
    add_matches(hits, args.query, NamespaceStore.from_settings(settings, args.namespace), tool_embedder)
    if args.json:
        print(json.dumps(hits, indent=2, default=str))
        return 0
    print_hits(hits)
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

    args.filter = dict(args.filter) if args.filter else None
    options = _options(args, ChunkOptions)
    if options is None:
        return 2
    settings = load_settings()
    store = NamespaceStore.from_settings(settings, args.namespace).pinned()  # one index version
    embedder = cached_embedder(settings)
    try:
        graph = load_namespace_chunk_graph(store, dimension=embedder.dimension)
        hits = graph.query(embedder.embed([args.query])[0], **options.given())
    except ChunkGraphError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = [{"id": h.id, "score": h.score, "text": h.content, **h.metadata} for h in hits]
    add_matches(rows, args.query, store, embedder)
    if args.json:
        print(
            json.dumps(
                [{**h.to_dict(), "match": r["match"]} for h, r in zip(hits, rows, strict=True)],
                indent=2,
                default=str,
            )
        )
        return 0
    print_hits(rows, ".4f")
    return 0


def cmd_query_global(args: argparse.Namespace) -> int:
    from pipeline.api import global_search
    from pipeline.query.global_.context import GlobalContextError
    from pipeline.query.global_.search import GlobalSearchConfig

    options = _options(args, GlobalOptions)
    if options is None:
        return 2
    settings = load_settings()
    config = GlobalSearchConfig.from_settings(settings, **options.given())
    if args.estimate:
        return _estimate("global", args, settings, config)
    try:
        result = global_search(args.namespace, args.query, settings=settings, config=config)
    except GlobalContextError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    print(result.answer)
    cited = ", ".join(str(c) for c in result.cited_communities)
    print(f"\n[status: {result.status}; batches: {result.batches}; cited communities: {cited or '-'}]")
    sel = result.selection
    if sel.get("mode") == "dynamic":
        u = result.usage
        calls = f"rate {u['rate_calls']}, map {u['map_calls']}, reduce {u['reduce_calls']}"
        print(
            f"[dynamic selection: {sel['rated']} reports rated, {sel['kept']} kept, {sel['mapped_reports']} "
            f"mapped; calls: {calls}]"
        )
        if sel.get("fallback"):
            print(f"[{sel['fallback']}]")
    elif sel.get("mode") == "level-auto":
        print(f"[level auto: level {sel['level']}, {sel['mapped_reports']} reports mapped]")
    elif sel.get("fallback"):
        print(f"[{sel['fallback']}]")
    if result.reason:
        print(f"[{result.reason}]")
    return 0 if result.status in ("completed", "partial", "no_results") else 1


def cmd_query_local(args: argparse.Namespace) -> int:
    from pipeline.api import local_search
    from pipeline.query.local.search import LocalSearchConfig, LocalSearchError

    options = _options(args, LocalOptions)
    if options is None:
        return 2
    try:
        settings = load_settings()
        config = LocalSearchConfig.from_settings(settings, **options.given())
        result = local_search(args.namespace, args.query, settings=settings, config=config)
    except LocalSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    print(result.answer)
    print("\nCommunities:")
    for c in result.communities:
        if c["matched_entities"]:
            print(
                f"  [{c['id']}] level {c['level']}: {c['title']} (matched: {', '.join(c['matched_entities'])})"
            )
    others = [str(c["id"]) for c in result.communities if not c["matched_entities"]]
    if others:
        print(f"  and {len(others)} more by graph and text similarity: {', '.join(others)}")
    from pipeline.query.common.pages import cite_line

    _citations([], result.quotes)
    print("Evidence:")
    for ev in result.evidence[: args.show_evidence]:
        snippet = " ".join(ev["text"].split())[:160]
        print(f"  [{ev['ref']}] {ev['kind']} {cite_line(ev)} {snippet}")
    if result.status != "completed":
        print(f"[status: {result.status}; {result.reason}]")
    return 0 if result.status in ("completed", "no_results") else 1


def _estimate(mode: str, args: argparse.Namespace, settings: Any, config: Any) -> int:
    from pipeline.query.estimate import estimate_query
    from pipeline.runtime import cached_embedder

    store = NamespaceStore.from_settings(settings, args.namespace)
    estimate = estimate_query(mode, store, args.query, settings, cached_embedder(settings), config)
    print(json.dumps(estimate.to_dict(), indent=2) if args.json else estimate.render())
    return 0


def _citations(citations: list[dict[str, Any]], quotes: list[dict[str, Any]] = ()) -> None:
    """Where each cited row comes from: a passage's document, pages, section and offsets, one a line;
    other rows by their names, one line per section; then each quoted sentence's own page (parsed files
    only, `pipeline.query.common.pages`)."""
    from pipeline.query.common.pages import cite_line

    if citations:
        print("Citations:")
    named: dict[str, list[str]] = {}
    for c in citations:
        if c.get("start_char") is not None:
            print(f"  [{c['section']} {c['id']}] {cite_line(c)}")
        else:
            name = c.get("title") or c.get("source") and f"{c.get('source')} -> {c.get('target')}" or ""
            named.setdefault(c["section"], []).append(f"{c['id']} {name}".strip())
    for section, names in named.items():
        print(f"  [{section}] " + "; ".join(names))
    if quotes:
        print("Quoted:")
    for q in quotes:
        print(f"  [sources {q['source']}] {cite_line(q)}")


def answer_or_exit(
    args: argparse.Namespace,
    mode: str,
    model: type[QueryOptions],
    config_of: Any,
    search: Callable[..., Any],
    errors: Any = (),
) -> Any:
    """What every answering query command does first: its options (exit 2 when invalid), its config,
    `--estimate` (exit 0), the search (exit 2 on a bad request), `--json` (printed, exit 0). Returns the
    result to print, or the exit code when the command ends here."""
    options = _options(args, model)
    if options is None:
        return 2
    settings = load_settings()
    try:
        config = config_of.from_settings(settings, **options.given())
        if getattr(args, "estimate", False):
            return _estimate(mode, args, settings, config)
        result = search(args.namespace, args.query, settings=settings, config=config)
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
        return 0
    return result


def cmd_query_drift(args: argparse.Namespace) -> int:
    from pipeline.api import drift_search
    from pipeline.query.drift.search import DriftSearchConfig, DriftSearchError

    result = answer_or_exit(args, "drift", DriftOptions, DriftSearchConfig, drift_search, DriftSearchError)
    if isinstance(result, int):
        return result
    print(result.answer)
    print("\nSearch tree:")
    by_id = {n.id: n for n in result.nodes}

    def show(node_id: int, indent: int) -> None:
        n = by_id[node_id]
        print(f"{'  ' * indent}- [{n.id}] {n.status} score={n.score:g}: {n.question}")
        for child in n.children:
            show(child, indent + 1)

    if 0 in by_id:
        show(0, 1)
    _citations(result.citations)
    u = result.usage
    print(
        f"\n[status: {result.status}; model calls: primer {u['primer_calls']}, follow-ups "
        f"{u['follow_up_calls']}, reduce {u['reduce_calls']} (at most {u['max_calls']})]"
    )
    if result.reason:
        print(f"[{result.reason}]")
    return 0 if result.status in ("completed", "partial", "no_results") else 1


def cmd_query_basic(args: argparse.Namespace) -> int:
    from pipeline.api import basic_search
    from pipeline.query.basic.search import BasicSearchConfig, BasicSearchError

    result = answer_or_exit(args, "basic", BasicOptions, BasicSearchConfig, basic_search, BasicSearchError)
    if isinstance(result, int):
        return result
    print(result.answer)
    _citations(result.citations, result.quotes)
    print(f"\n[status: {result.status}; passages: {len(result.sources)}]")
    if result.reason:
        print(f"[{result.reason}]")
    return 0 if result.status in ("completed", "no_results") else 1


def _options(args: argparse.Namespace, model: type[QueryOptions]) -> QueryOptions | None:
    """The mode's request model from the flags, or None after printing why it is invalid (exit 2)."""
    question = getattr(args, "query", None)
    if isinstance(question, str) and not question.strip():  # as HTTP and MCP refuse it
        print(f"error: {BLANK_QUESTION}", file=sys.stderr)
        return None
    try:
        return options_from(args, model)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def add_query_parsers(q: Any, namespace: Callable[[str], str]) -> None:
    """One subcommand per mode; its options are the mode's request model's (`add_options`)."""
    p = q.add_parser("vector", help="vector search over the namespace's text units")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument(
        "--store",
        choices=("lancedb", "pgvector", "chroma"),
        default="lancedb",
        help="pgvector (PIPELINE_PGVECTOR_DSN) and chroma get the text units copied from LanceDB first",
    )
    add_options(p, VectorOptions)
    p.add_argument("--json", action="store_true")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_vector)

    p = q.add_parser("chunks", help="chunk-graph search: random walk with restart from the nearest chunks")
    p.add_argument("--namespace", required=True, type=namespace)
    pairs = {"type": _filter_pair, "action": "append", "metavar": "KEY=VALUE"}
    add_options(p, ChunkOptions, filter=pairs)
    p.add_argument("--json", action="store_true")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_chunks)

    p = q.add_parser("global", help="map-reduce over community reports: corpus-wide questions")
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, GlobalOptions)
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("--estimate", action="store_true", help=ESTIMATE_HELP)
    p.add_argument("query")
    p.set_defaults(func=cmd_query_global)

    p = q.add_parser("local", help="entity/graph/vector retrieval with evidence cited to document offsets")
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, LocalOptions)
    p.add_argument("--show-evidence", type=int, default=8, help="evidence items to print")
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("query")
    p.set_defaults(func=cmd_query_local)

    p = q.add_parser("drift", help="DRIFT: primer over community reports, follow-up local searches, reduce")
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, DriftOptions)
    p.add_argument("--json", action="store_true", help="print the whole result, the tree included")
    p.add_argument("--estimate", action="store_true", help=ESTIMATE_HELP)
    p.add_argument("query")
    p.set_defaults(func=cmd_query_drift)

    p = q.add_parser("basic", help="vector RAG: the nearest passages answered with citations (the baseline)")
    p.add_argument("--namespace", required=True, type=namespace)
    add_options(p, BasicOptions)
    p.add_argument("--json", action="store_true", help="print the whole result")
    p.add_argument("--estimate", action="store_true", help=ESTIMATE_HELP)
    p.add_argument("query")
    p.set_defaults(func=cmd_query_basic)


ESTIMATE_HELP = (
    "print the model calls, tokens and cost one question can take, per phase, without calling the model"
)
