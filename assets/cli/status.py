"""`pipeline status` (a namespace's tables, row counts, how it was built and the last run's spend) and
`pipeline communities` (a level's community titles, highest rank first); both read the store directly."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pipeline.io.repair import find_damage
from pipeline.io.store import NamespaceStore
from pipeline.settings import load_settings


def cmd_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    store = NamespaceStore.from_settings(settings, args.namespace)
    for found in find_damage(store) if store.exists() else ():
        raise found  # the first damaged table, named with its repair (exit 3)
    tables = store.tables()
    if not tables:
        print(f"namespace {args.namespace!r} has no tables under {store.uri} (run `index` first)")
        return 1
    empty = [t.name for t in tables if t.rows == 0 and t.kind == "parquet"]
    # the empty tables on the namespace's own line: `make demo` fits on two screens
    print(f"namespace {args.namespace!r} at {store.uri}" + (f"; empty: {', '.join(empty)}" if empty else ""))
    print(f"  {'table':<28} {'kind':<8} {'rows':>10}  materialized (UTC)")
    for t in tables:
        if t.name not in empty or t.kind != "parquet":
            print(f"  {t.name:<28} {t.kind:<8} {t.rows:>10}  {t.modified:%Y-%m-%d %H:%M:%S}")
    print(f"{index_method(store)}; {last_spend(args.namespace)}")
    print(f"  {similarity_levels(store, settings)}")
    return 0


def similarity_levels(store: NamespaceStore, settings: Any) -> str:
    """The similarity levels queries use on this namespace, and where they come from."""
    from pipeline.embeddings import levels
    from pipeline.embeddings.base import EmbedderConfigError
    from pipeline.runtime import cached_embedder

    found = levels.stored(store)
    try:
        leveled = levels.for_namespace(cached_embedder(settings), found)
    except EmbedderConfigError as exc:
        return f"similarity levels: none usable: {exc}"
    shown = ", ".join(f"{k} {getattr(leveled.calibration, k):.2f}" for k in levels.LEVELS)
    where = (
        f"{leveled.levels_source}, {found.model_id} {found.dimension}-d" if found else leveled.levels_source
    )
    return f"similarity levels: {shown} ({where})"


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


def add_status_parsers(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("status", help="a namespace's tables, row counts and materialization times")
    p.add_argument("--namespace", required=True, type=namespace)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("communities", help="a level's community titles and sizes, highest rank first")
    p.add_argument("--namespace", required=True, type=namespace)
    p.add_argument("--level", type=int, default=0, help="0 = top level")
    p.add_argument("--limit", type=int, default=20)
    p.set_defaults(func=cmd_communities)
