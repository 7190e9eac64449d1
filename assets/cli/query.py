"""`pipeline query <mode>`: one command per registered query mode (`pipeline.query.registry`), built by
one loop when the parser is built: the mode's options are its request model's flags (`query_options`),
its help, own flags and printing come from its record's `terminal` (`pipeline.query.common.mode`).

Each command calls `pipeline` directly (no Dagster): it builds the namespace's scope once, runs the
mode's search and prints the answer with its status and citations (or the whole result with --json).
It exits 0 on an answer, 1 on a cancelled or failed query (a model that is down, hung, failing or
garbling: one line on stderr naming it, its retries' log lines kept for -v), 2 on a bad request (a blank
question included) or LLM settings that cannot work, and 3 when the namespace is not indexed yet or a
table of it is damaged (`pipeline.io.damage`). `--estimate`, on the modes that call a model, prints what
one question can cost without sending anything (`pipeline.query.estimate`)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from assets.cli.exits import unavailable
from assets.cli.query_options import add_options, options_from
from assets.cli.query_stream import STREAM_HELP, Printer
from pipeline.io.store import NamespaceStore
from pipeline.llm.errors import EmbeddingUnavailableError, LLMConfigError, LLMError, error_code
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.query.common.mode import Mode
from pipeline.query.common.terminal import generic
from pipeline.query.requests import QueryOptions
from pipeline.settings import load_settings

BLANK_QUESTION = "the question is blank: it must contain a non-blank character"
# Each retry and each failed call logs a line: the result's reason, or the one error line, says it.
LLM_LOGS = ("pipeline.llm.transport", "pipeline.llm.client")
ESTIMATE_HELP = (
    "print the model calls, tokens and cost one question can take, per phase, without calling the model"
)


@contextmanager
def quiet(loggers: tuple[str, ...], verbose: bool) -> Iterator[None]:
    """A mode's noisy loggers off unless -v: the vector tool logs a failure with its traceback (for a
    service's log), the CLI prints the reason on one line instead."""
    logs = [logging.getLogger(name) for name in loggers]
    before = [log.disabled for log in logs]
    for log in logs:
        log.disabled = not verbose
    try:
        yield
    finally:
        for log, was in zip(logs, before, strict=True):
            log.disabled = was


def cmd_query(args: argparse.Namespace) -> int:
    """`pipeline query <mode>`: the options (exit 2 when invalid), the config, `--estimate` (exit 0),
    the search (exit 2 on a bad request), then the mode's renderer."""
    from pipeline.runtime import cached_embedder, query_runtime, report_writer

    mode = registry.mode(args.query_kind)
    options = _options(args, mode.options)
    if options is None:
        return 2
    settings = load_settings()
    own = {name: getattr(args, name) for name in mode.terminal.config_flags}
    printer = Printer(args.json) if getattr(args, "stream", False) else None
    try:
        if getattr(args, "estimate", False):
            return _estimate(mode, args, settings, options, own)
        if mode.uses_model:
            rt = query_runtime(args.namespace, settings=settings)
            parts = dict(store=rt.store, engine=rt.engine, embedder=rt.embedder)
            parts["write_reports"] = report_writer(settings)
        else:  # no engine to build: it answers with no LLM configured
            store = NamespaceStore.from_settings(settings, args.namespace).pinned()
            parts = dict(store=store, engine=None, embedder=cached_embedder(settings))
        prepared = registry.prepare(
            mode.name, args.query, options, settings=settings, events=printer, own=own, **parts
        )
        scope = prepared.scope
        with quiet((*mode.terminal.quiet, *LLM_LOGS), getattr(args, "verbose", False)):
            result = prepared.run_sync()
    except mode.errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LLMConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LLMError as exc:
        return model_failed(exc, printer)
    render = mode.terminal.render or generic
    return render(result, args, scope) if printer is None else printer.finish(render, result, args, scope)


def model_failed(exc: LLMError, printer: Printer | None) -> int:
    """The question failed because the model did: one line on stderr (and, streaming JSON, the `error`
    event the HTTP API would send), exit 1."""
    if printer is not None and printer.as_json:
        printer(ev.ERROR, {"status": "failed", "code": error_code(exc), "message": str(exc)})
    if isinstance(exc, EmbeddingUnavailableError):
        return unavailable(exc)  # exit 3, as a namespace that cannot be queried yet
    print(f"error: the model failed: {exc}", file=sys.stderr)
    return 1


def _estimate(mode: Mode, args: argparse.Namespace, settings: Any, options: Any, own: dict[str, Any]) -> int:
    from pipeline.runtime import cached_embedder

    store = NamespaceStore.from_settings(settings, args.namespace)
    estimate = registry.estimate(
        mode.name,
        args.query,
        options,
        settings=settings,
        store=store,
        embedder=cached_embedder(settings),
        own=own,
    )
    print(json.dumps(estimate.to_dict(), indent=2) if args.json else estimate.render())
    return 0


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
    """One subcommand per registered mode, as the registry stands when the parser is built."""
    for mode in sorted(registry.MODES.values(), key=lambda m: m.terminal.rank):
        term = mode.terminal
        p = q.add_parser(mode.name, help=term.help or mode.summary)
        p.add_argument("--namespace", required=True, type=namespace)
        if term.flags is not None and term.flags_first:
            term.flags(p)
        add_options(p, mode.options, **{k: dict(v) for k, v in term.special.items()})
        if term.flags is not None and not term.flags_first:
            term.flags(p)
        p.add_argument("--json", action="store_true", help=term.json_help)
        p.add_argument("--stream", action="store_true", help=STREAM_HELP)
        if mode.estimate is not None:
            p.add_argument("--estimate", action="store_true", help=ESTIMATE_HELP)
        p.add_argument("query")
        p.set_defaults(func=cmd_query)
