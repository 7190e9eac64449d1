"""`pipeline index`: a namespace's indexing assets materialized through Dagster (`assets.launch`), so that
a CLI run is the same materialization the UI performs; `--estimate` counts the model calls without
Dagster, and `--all-namespaces` backfills every namespace, one run each. Dagster is imported only when
the command runs, which keeps the other commands quick to start."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any, get_args

from assets.cli.exits import EXIT_BUSY
from pipeline.settings import load_settings
from pipeline.settings.methods import IndexMethod


def cmd_index_all(launch: ModuleType) -> int:
    """Backfill: every folder under the input root and every registered namespace, one run each."""
    from assets.cli.index_display import rejection_line

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
    from pipeline.index.estimate_methods import estimate_methods

    if args.all_namespaces:
        print("error: --estimate takes one --namespace", file=sys.stderr)
        return 2
    estimate = estimate_methods(args.namespace, load_settings(), args.input)
    print(json.dumps(estimate.to_dict(), indent=2) if args.json else estimate.render())
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    if args.method:  # the flag is the setting: every step of the run (and the estimate) reads it
        os.environ["PIPELINE_INDEX_METHOD"] = args.method
    if args.reports:
        os.environ["PIPELINE_REPORTS"] = args.reports
    if args.reembed:
        os.environ["PIPELINE_EMBEDDING_REEMBED"] = "true"
    if args.estimate:
        return cmd_index_estimate(args)
    from assets import launch  # dagster loads only for this command
    from assets.cli.index_display import (
        StageDisplay,
        outcome_json,
        print_failures,
        print_losses,
        print_outcome,
    )
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
        if args.record:
            result = recorded_run(run, args.namespace, args.record)
        elif args.json:
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


def recorded_run(run: Callable[[], Any], namespace: str, prefix: str) -> Any:
    """`run` with its stages written to `prefix`'s record (`assets.run_record`) for the query service,
    which launched this process for an upload and reads that record, not this output."""
    from assets.progress import listening
    from assets.run_record import RunRecorder

    recorder = RunRecorder(prefix)
    recorder.begin(namespace)
    try:
        with listening(recorder):
            result = run()
    except BaseException as exc:
        recorder.end(None, f"{type(exc).__name__}: {exc}")
        raise
    recorder.end(result)
    return result


def add_index_parser(sub: Any, namespace: Callable[[str], str]) -> None:
    p = sub.add_parser("index", help="materialize a namespace's indexing assets through Dagster")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--namespace", type=namespace)
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
        choices=get_args(IndexMethod),
        help="standard: the model extracts, describes and reports; fast: the NLP graph and model "
        "reports; nlp: no model (default: PIPELINE_INDEX_METHOD, else nlp, or standard with the "
        "openai provider)",
    )
    p.add_argument(
        "--reports",
        choices=("eager", "on_demand"),
        help="eager: every model report now (fills in what on_demand left extractive, e.g. nightly); "
        "on_demand: the top level's only (default: PIPELINE_REPORTS, else eager)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run (its metadata per asset, failures) or, with --estimate, the estimate as JSON",
    )
    p.add_argument(
        "--reembed",
        action="store_true",
        help="re-embed a namespace whose vectors came from another embedding model (without it, such a "
        "run stops before embedding and names both models)",
    )
    p.add_argument(
        "--record",
        metavar="PREFIX",
        help="write the run's stage events to PREFIX.events.jsonl as it goes and its outcome to "
        "PREFIX.result.json at its end (the query service's uploads read them)",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="refuse (exit 4) instead of waiting when the namespace has a run in progress",
    )
    p.set_defaults(func=cmd_index)
