"""Command line: `pipeline index|status|query ...` (also `python -m assets ...`).

It lives beside the Dagster layer because `index` hands the work to it (`assets.launch`), so that a
CLI run is the same materialization the UI performs; the other commands call `pipeline` directly.
Dagster is imported only when `index` runs, which keeps the query commands quick to start.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
import time
from types import ModuleType

from assets.eval_cli import add_eval_parser
from assets.query_cli import add_query_parsers, damaged, not_ready
from assets.query_cli_lazy import add_lazy_parsers
from assets.show_cli import add_show_parser
from pipeline.core.namespace import InvalidNamespaceError, validate_namespace
from pipeline.io.damage import IndexDamaged
from pipeline.io.repair import diagnose, find_damage
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.settings import ConfigError, load_settings

EXIT_BUSY = 4


def _namespace(value: str) -> str:
    try:
        return validate_namespace(value)
    except InvalidNamespaceError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_index_all(launch: ModuleType) -> int:
    """Backfill: every folder under the input root and every registered namespace, one run each."""
    from assets.index_display import rejection_line

    started = time.monotonic()
    results, skipped = launch.backfill_namespaces(on_event=lambda m: print("  " + m, flush=True))
    for ns in skipped:
        print(f"  skipped {ns!r}: no folder under the input root (re-index it with --input)")
    failed = [ns for ns, r in results.items() if not r.success]
    for ns, r in results.items():
        print(f"{ns}: run {r.run_id} {'SUCCESS' if r.success else 'FAILED'}")
        if rejected := rejection_line(r):
            print(f"  {rejected}")
        for message in r.failures:
            print(f"  error: {message}", file=sys.stderr)
    print(f"\n{len(results)} namespaces, {len(failed)} failed, in {time.monotonic() - started:.1f}s")
    return 1 if failed else 0


def cmd_index_estimate(args: argparse.Namespace) -> int:
    """What the index run would send to the model, counted without sending it (no Dagster)."""
    from pipeline.index.estimate import estimate_methods

    if args.all_namespaces:
        print("error: --estimate takes one --namespace", file=sys.stderr)
        return 2
    estimate = estimate_methods(args.namespace, load_settings(), args.input)
    print(json.dumps(estimate.to_dict(), indent=2) if args.json else estimate.render())
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    if args.method:  # the flag is the setting: every step of the run (and the estimate) reads it
        os.environ["PIPELINE_INDEX_METHOD"] = args.method
    if args.estimate:
        return cmd_index_estimate(args)
    from assets import launch  # dagster loads only for this command
    from assets.index_display import StageDisplay, outcome_json, print_failures, print_losses, print_outcome
    from assets.progress import listening

    if args.all_namespaces:
        return cmd_index_all(launch)
    started = time.monotonic()
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if args.json else print
    say(f"indexing namespace {args.namespace!r}" + (f" from {args.input}" if args.input else ""))
    from assets.namespace_lock import NamespaceBusy

    try:
        run = functools.partial(
            launch.run_index,
            args.namespace,
            input_dir=args.input,
            on_event=lambda m: say("  " + m),
            wait=not args.no_wait,
            quiet=not args.verbose,
        )
        if args.json:
            result = run()
        else:
            with StageDisplay() as display, listening(display):
                result = run()
    except NamespaceBusy as exc:
        print(f"error: {exc}; not started (--no-wait)", file=sys.stderr)
        return EXIT_BUSY
    seconds = time.monotonic() - started
    if args.json:
        print(outcome_json(result, seconds))
        print_losses(result, file=sys.stderr)
        print_failures(result)
    else:
        print_outcome(result, seconds)
    return 0 if result.success else 1


def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    store = NamespaceStore.from_settings(settings, args.namespace)
    for found in find_damage(store) if store.exists() else ():
        raise found  # the first damaged table, named with its repair (exit 3)
    tables = store.tables()
    if not tables:
        print(f"namespace {args.namespace!r} has no tables under {store.uri} (run `index` first)")
        return 1
    print(f"namespace {args.namespace!r} at {store.uri}")
    print(f"  {'table':<28} {'kind':<8} {'rows':>10}  materialized (UTC)")
    empty = [t.name for t in tables if t.rows == 0 and t.kind == "parquet"]
    for t in tables:
        if t.name not in empty or t.kind != "parquet":
            print(f"  {t.name:<28} {t.kind:<8} {t.rows:>10}  {t.modified:%Y-%m-%d %H:%M:%S}")
    if empty:
        print(f"  empty: {', '.join(empty)}")
    print(f"{index_method(store)}; {last_spend(args.namespace)}")
    return 0


def index_method(store: NamespaceStore) -> str:
    """How the index was built: the extraction method and the reports' model."""
    from pipeline.core import schema

    def first(table: str, column: str) -> str:
        if not store.has_table(table):
            return "-"
        values = store.read_table(table, columns=[column]).column(0).to_pylist()
        return ", ".join(sorted({str(v) for v in values if v})) or "-"

    return (
        f"  method: extraction {first(schema.EXTRACTED_GRAPH, 'method')}, reports "
        f"{first(schema.COMMUNITY_REPORTS, 'method')}; model: {first(schema.COMMUNITY_REPORTS, 'model')}"
    )


def last_spend(namespace: str) -> str:
    """The last index run's model spend, from the Dagster instance's event log."""
    from dagster import DagsterInstance

    from assets.launch import ensure_dagster_home
    from assets.runs import last_run_spend

    ensure_dagster_home()
    with DagsterInstance.get() as instance:
        spend = last_run_spend(instance, namespace)
    if spend is None:
        return "last run: none recorded in this Dagster instance"
    return (
        f"last run {spend['run_id'][:8]}: {spend['llm_calls']} model calls, "
        f"{spend['llm_prompt_tokens']:,} + {spend['llm_completion_tokens']:,} tokens, "
        f"${spend['llm_cost_usd']:.4f}"
    )


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pipeline", description="GraphRAG indexing and query on Dagster")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="debug logging: Dagster's event stream and the libraries' own log lines",
    )
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
    p.add_argument(
        "--method",
        choices=("standard", "fast", "nlp"),
        help="standard: the model extracts, describes and reports; fast: the NLP graph and model "
        "reports; nlp: no model (default: PIPELINE_INDEX_METHOD, else nlp, or standard with the "
        "openai provider)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run (its metadata per asset, failures) or, with --estimate, the estimate as JSON",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="refuse (exit 4) instead of waiting when the namespace has a run in progress",
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("status", help="a namespace's tables, row counts and materialization times")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("communities", help="a level's community titles and sizes, highest rank first")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--level", type=int, default=0, help="0 = top level")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(func=cmd_communities)

    p = sub.add_parser("import", help="import an index another tool wrote").add_subparsers(
        dest="import_kind", required=True
    )
    p = p.add_parser("graphrag", help="a Microsoft GraphRAG 2.x/3.x output folder, with no LLM call")
    p.add_argument("--from", dest="source", required=True, help="the output folder `graphrag index` wrote")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.set_defaults(func=cmd_import_graphrag)

    p = sub.add_parser("graph", help="the entity graph as a self-contained HTML page (opens offline)")
    p.add_argument("--namespace", required=True, type=_namespace)
    p.add_argument("--out", help="file to write (default: graph.html in the namespace's folder)")
    p.set_defaults(func=cmd_graph)

    add_eval_parser(sub, _namespace)
    add_show_parser(sub, _namespace)

    q = sub.add_parser("query", help="query an index").add_subparsers(dest="query_kind", required=True)
    add_query_parsers(q, _namespace)
    add_lazy_parsers(q, _namespace)
    return parser


def quiet_libraries(verbose: bool) -> None:
    """Debug logging with -v; otherwise warnings only, also from the libraries that set their own
    level (bm25s logs at DEBUG) or log from Rust (LanceDB's WARN "No existing dataset" per new table)."""
    level = logging.DEBUG if verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.setLevel(level)  # a logger's own level does not stop its records at the root's handler
    if not verbose:
        os.environ.setdefault("LANCEDB_LOG", "error")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_libraries(args.verbose)
    try:
        return args.func(args)
    except TableNotFoundError as exc:
        return not_ready(str(exc))
    except IndexDamaged as exc:
        return damaged(exc)
    except (ConfigError, InvalidNamespaceError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception:
        # A Lance data file cut short fails deep inside a read, naming no table: look for one.
        found = _damage_behind(args)
        if found is None:
            raise
        return damaged(found)


def _damage_behind(args: argparse.Namespace) -> IndexDamaged | None:
    """The damaged table of the command's namespace, if it has one (an index run repairs its own)."""
    namespace = getattr(args, "namespace", None)
    if args.command == "index" or not namespace:
        return None
    try:
        return diagnose(NamespaceStore.from_settings(load_settings(), namespace))
    except Exception:  # noqa: BLE001 - no diagnosis: the original error is raised
        return None


if __name__ == "__main__":
    sys.exit(main())
