"""`pipeline eval`'s run: every question asked of every mode on one namespace, each answer scored on
the context the mode built, the model's verdict when one is configured, and the aggregates.

The store, engine, embedder and settings are given (the CLI and the Dagster asset build them), as for
every query-time call. Questions are asked one at a time, so a question's latency and its calls and
tokens (the engine's usage before and after) are its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.eval.judge import judge
from pipeline.eval.metrics import Scored, answer_words, score, summarize
from pipeline.eval.pages import page_scores
from pipeline.eval.questions import EvalQuestion
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query import registry
from pipeline.query.common.shown import Context


def eval_modes() -> tuple[str, ...]:
    """The modes `pipeline eval` asks by default, in order: the answering modes of the registry (those
    auto may route to, and auto itself), not the retrieval-only ones."""
    return (*registry.routable(), "auto")


class EvalError(ValueError):
    """An evaluation that cannot start (unknown mode, namespace not indexed), said in one line."""


@dataclass
class EvalRun:
    namespace: str
    modes: list[str]
    rows: list[Scored] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def summary(self) -> dict[str, Any]:
        return summarize(self.rows, self.modes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "modes": self.modes,
            "questions": len({r.id for r in self.rows}),
            "seconds": round(self.seconds, 2),
            "metrics": self.summary,
            "rows": [r.to_dict() for r in self.rows],
        }


def parse_modes(value: str | list[str] | None) -> list[str]:
    """The modes asked for (comma-separated or a list), in the order given; EvalError on an unknown one."""
    known = eval_modes()
    if value is None:
        return list(known)
    names = value.split(",") if isinstance(value, str) else list(value)
    modes = list(dict.fromkeys(m.strip() for m in names if m.strip()))
    unknown = [m for m in modes if m not in known]
    if unknown or not modes:
        raise EvalError(f"unknown mode {', '.join(unknown) or '(none)'}; modes are {', '.join(known)}")
    return modes


def check_indexed(store: NamespaceStore) -> None:
    """EvalError unless the namespace has the text units every mode reads."""
    if not store.has_table(schema.TEXT_UNITS):
        raise EvalError(
            f"namespace {store.namespace!r} is not indexed (no {schema.TEXT_UNITS} under {store.uri})"
        )


def _searches(engine: Engine, embedder: Embedder, settings: Any) -> dict[str, Callable[..., Any]]:
    """mode -> (store, question) -> its search's coroutine through `registry.run`, with the configured
    defaults, writing deferred reports on first use as a question at any door does."""

    from pipeline.runtime import report_writer  # the composition root: eval's questions are queries

    parts = {
        "settings": settings,
        "engine": engine,
        "embedder": embedder,
        "write_reports": report_writer(settings),
    }

    def search(mode: str) -> Callable[..., Any]:
        return lambda s, q: registry.run(mode, q, store=s, **parts)

    return {m: search(m) for m in eval_modes()}


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]


async def _ask(
    mode: str, q: EvalQuestion, search: Callable[..., Any], store: NamespaceStore, engine: Engine
) -> Scored:
    before = engine.usage.counters()
    started = time.perf_counter()
    row = Scored(id=q.id, type=q.type, mode=mode, question=q.question, status="failed")
    try:
        result = (await search(store, q.question)).to_dict()
    except TableNotFoundError as exc:
        row.status, row.error = "index_not_ready", _one_line(exc)
        result = None
    except Exception as exc:  # one question's failure is counted, the evaluation goes on
        row.error = _one_line(exc)
        result = None
    row.latency_s = time.perf_counter() - started
    after = engine.usage.counters()
    row.calls = after["calls"] - before["calls"]
    row.prompt_tokens = after["prompt_tokens"] - before["prompt_tokens"]
    row.completion_tokens = after["completion_tokens"] - before["completion_tokens"]
    if result is None:
        return row
    row.status = result.get("status") or "completed"
    row.route = result.get("route") if mode == "auto" else None
    shown = registry.mode(mode).shown
    context = shown(result, store) if shown else Context()
    row.context_recall, row.missing_gold, row.answer_coverage, row.missing_words = score(q, context)
    row.answer_words = answer_words(q, result.get("answer") or "")
    row.page_hit, row.page_spans = page_scores(q.gold_pages, result)
    row.judge = await judge(engine, q.question, q.answer, result.get("answer") or "")
    return row


async def evaluate_async(
    store: NamespaceStore,
    engine: Engine,
    embedder: Embedder,
    settings: Any,
    questions: list[EvalQuestion],
    modes: list[str],
    on_progress: Callable[[str], None] | None = None,
) -> EvalRun:
    """Every question asked of every mode in turn (mode by mode), scored; synchronous callers run it on
    the engine's loop (`engine.run_sync`)."""
    check_indexed(store)
    searches = _searches(engine, embedder, settings)
    run = EvalRun(namespace=store.namespace, modes=list(modes))
    started = time.perf_counter()
    for mode in modes:
        mode_started = time.perf_counter()
        for q in questions:
            run.rows.append(await _ask(mode, q, searches[mode], store, engine))
        if on_progress is not None:
            on_progress(f"{mode}: {len(questions)} questions in {time.perf_counter() - mode_started:.1f}s")
    run.seconds = time.perf_counter() - started
    return run
