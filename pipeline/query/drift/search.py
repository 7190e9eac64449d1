"""DRIFT search (Dynamic Reasoning and Inference with Flexible Traversal): a primer over the community
reports nearest to the question, rounds of follow-up local searches, and a reduce of the whole tree.

Microsoft GraphRAG's flow, on our pieces:
1. **Primer**: the question is embedded and the `primer_k` community reports nearest to it (any level,
   or `community_level`) are split into `primer_folds` folds; each fold is one call (`Engine.drift_primer`)
   that answers, scores its answer 0-100 and proposes follow-up questions. The root node of the tree is
   the primer: its answer the folds' answers, its follow-ups theirs.
2. **Rounds**: `depth` times, the `breadth` open follow-ups with the best parent score are answered, each
   by a local search (`pipeline.query.retrieval.local_retrieval.local_search_with`, with the offline question parse
   and the community ranking: no model call) whose context is answered by one call
   (`Engine.drift_follow_up`) with an answer, a score and further follow-ups, which become open children.
3. **Reduce**: the answered steps, best score first, within `reduce_budget` tokens, are merged into one
   answer (`Engine.drift_reduce`) that keeps their `[Data: ...]` citations; these resolve against the
   rows of every step's context (reports by community number, entities, relationships, claims and
   sources by their tables' human-readable ids, which are the same in every context).

Model calls per question are at most `primer_folds + depth * breadth + 1` (`DriftSearchConfig.max_calls`;
each call may be retried or repaired once by the client, which `usage.requests` counts), and are printed
per phase in the result's `usage`.

Statuses as for global search: `completed`; `partial` when a primer fold, a follow-up or the reduce failed
(a failed step never fails the query: it is a node with its error, and a failed reduce is replaced by the
offline merge of the steps); `no_results` when no report is relevant (the best cosine below the
embedder's `relevant` level) or no step found anything; `cancelled` when the caller cancelled or the
deadline passed, with the tree as far as it got. When no step answered because the model failed (down,
hung, failing), the search raises that LLMError: `no_results` never stands for a failure.

Defaults start from Microsoft GraphRAG's (`DriftSearchDefaults`, graphrag 3.x: drift_k_followups=20
reports and follow-ups per round, primer_folds=5, n_depth=3, concurrency=32, local context 12,000
tokens): up to 5 + 3 x 20 + 1 = 66 calls per question. Ours answer in at most 2 + 2 x 3 + 1 = 9 calls,
which a laptop model serves in a minute; raise them per query or in settings.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.core.plain import attributes, plain
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.answer_context import LocalContext
from pipeline.query.answer.citations import resolve_citations
from pipeline.query.answer.pages import locate_result
from pipeline.query.answer.prompt_text import skeleton_text
from pipeline.query.answer.token_budget import pack
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.query.drift.steps import (
    Cancelled,
    DriftNode,
    DriftSearchConfig,
    DriftSearchError,
    Run,
    primer_reports,
    run_follow_up,
    run_primer,
)
from pipeline.query.drift.tasks import (
    DRIFT_REDUCE,
    DriftReduceRequest,
    StepAnswer,
    offline_reduce,
    reduce_block,
    reduce_messages,
)
from pipeline.query.retrieval.local_index import load_local_index

DEFAULT_CONFIG = DriftSearchConfig()

__all__ = ["DriftNode", "DriftSearchConfig", "DriftSearchError", "DriftSearchResult", "drift_search_async"]

NO_RESULTS_ANSWER = "No relevant community reports were found for this question."


@dataclass
class DriftSearchResult:
    question: str
    status: str  # completed | partial | no_results | cancelled
    answer: str = ""
    reason: str | None = None
    nodes: list[DriftNode] = field(default_factory=list)  # the tree, flat: each names its parent, children
    citations: list[dict[str, Any]] = field(default_factory=list)  # rows the final answer cites
    unresolved_citations: list[str] = field(default_factory=list)
    failed_steps: int = 0
    # every row any step's context held, {section, id, ...what it names}, as local search's
    context_rows: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # counters plus calls per phase and max_calls
    config: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def tree(self) -> dict[str, Any]:
        """The tree as nested outlines: id, question, status, score and children."""
        by_id = {n.id: n for n in self.nodes}

        def outline(node: DriftNode) -> dict[str, Any]:
            children = [outline(by_id[c]) for c in node.children]
            return {**attributes(node, "id", "question", "status", "score"), "children": children}

        return outline(by_id[0]) if 0 in by_id else {}

    def to_dict(self) -> dict[str, Any]:
        out = plain(self)
        out["tree"] = self.tree()
        return out


def _reduce_input(run: Run) -> tuple[list[StepAnswer], str]:
    """The answered steps, best score first (the primer first among equals), that fit the reduce budget."""
    answered = sorted(
        (n for n in run.nodes if n.status == "answered" and n.answer.strip()), key=lambda n: (-n.score, n.id)
    )
    skeleton = skeleton_text(reduce_messages(run.question, "", run.cfg.response_type))
    steps = [StepAnswer(question=n.question, answer=n.answer, score=n.score) for n in answered]
    blocks = [reduce_block(s) for s in steps]
    kept = pack(blocks, skeleton, run.cfg.reduce_budget, run.cfg.local.encoding)
    return [steps[i] for i in kept], "\n\n".join(blocks[i] for i in kept)


async def drift_search_async(
    scope: QueryScope, question: str, cfg: DriftSearchConfig = DEFAULT_CONFIG
) -> DriftSearchResult:
    started = start_clock(question)
    store, embedder = scope.store, scope.embedder
    result = DriftSearchResult(question, "completed", config=_config_row(cfg))
    run = Run(question, scope, cfg)
    index = load_local_index(store)
    if cfg.community_level is not None and cfg.community_level not in index.levels:
        raise DriftSearchError(
            f"community level {cfg.community_level} does not exist in namespace {store.namespace!r}; "
            f"levels are {index.levels}"
        )
    try:
        vector = embedder.embed([question])[0]
        hits = primer_reports(store, index, vector, cfg)
        floor = embedder.calibration.relevant
        if not hits or hits[0][1] < floor:
            result.status, result.answer = "no_results", NO_RESULTS_ANSWER
            result.reason = (
                "the namespace has no community reports"
                if not hits
                else f"no community report is relevant to the question (best cosine {hits[0][1]:.2f} < {floor:.2f})"
            )
            return _finish(result, run, started)
        root = run.add(None, question)
        await run_primer(run, root, [r for r, _ in hits])
        for _ in range(cfg.depth):
            open_nodes = sorted(
                (n for n in run.nodes if n.status == "open"),
                key=lambda n: (-run.nodes[n.parent].score if n.parent is not None else 0.0, n.id),
            )[: cfg.breadth]
            if not open_nodes:
                break
            if why := scope.stopped():
                raise Cancelled(f"{why} before round {open_nodes[0].depth}")
            await asyncio.gather(*(run_follow_up(run, n) for n in open_nodes))
            if any(n.status == "cancelled" for n in open_nodes):
                raise Cancelled(f"{scope.stopped() or 'cancelled'} during round {open_nodes[0].depth}")
        await _reduce(run, result)
    except Cancelled as exc:
        result.status, result.answer, result.reason = "cancelled", "", str(exc)
    return _finish(result, run, started)


async def _reduce(run: Run, result: DriftSearchResult) -> None:
    failed = run.failures()
    result.failed_steps = run.failed_folds + sum(1 for n in run.nodes if n.status == "failed" and n.id != 0)
    chosen, context = _reduce_input(run)
    if not chosen and run.first_error is not None:
        raise run.first_error  # the model (or the code) failed, not the index: never no_results
    if not chosen:
        result.status, result.answer = "no_results", NO_RESULTS_ANSWER
        result.reason = (
            f"every step failed ({result.failed_steps}); first error: {failed[0]}"
            if failed
            else "no step found information relevant to the question"
        )
        return
    if why := run.scope.stopped():
        raise Cancelled(f"{why} before the reduce")
    request = DriftReduceRequest(
        question=run.question, answers=chosen, context=context, response_type=run.cfg.response_type
    )
    result.status = "partial" if failed else "completed"
    run.calls["reduce"] += 1
    try:
        result.answer = await run.scope.ask(DRIFT_REDUCE, request)
    except (LLMCancelledError, LLMTimeoutError) as exc:
        if run.scope.stopped():
            raise Cancelled(f"reduce stopped: {exc}") from None
        result.answer, result.status = offline_reduce(request), "partial"
        result.reason = f"reduce failed ({type(exc).__name__}: {exc}); answer merged from the steps"
    except Exception as exc:  # noqa: BLE001 - the steps' answers are still good evidence
        result.answer, result.status = offline_reduce(request), "partial"
        result.reason = f"reduce failed ({type(exc).__name__}: {exc}); answer merged from the steps"
    if failed and not result.reason:
        result.reason = f"{result.failed_steps} step(s) failed: " + "; ".join(failed[:3])
    every_row = LocalContext(text="", rows=list(run.rows.values()), budget=0, prompt_tokens=0)
    result.citations, result.unresolved_citations = resolve_citations(result.answer, every_row)


def _config_row(cfg: DriftSearchConfig) -> dict[str, Any]:
    out = {k: v for k, v in asdict(cfg).items() if k != "local"}
    out["max_calls"] = cfg.max_calls
    return out


def _finish(result: DriftSearchResult, run: Run, started: float) -> DriftSearchResult:
    result.nodes = run.nodes
    result.context_rows = [{"section": r.section, "id": r.id, **r.ref} for r in run.rows.values()]
    usage = run.scope.usage()
    usage.update(
        primer_calls=run.calls["primer"],
        follow_up_calls=run.calls["follow_up"],
        reduce_calls=run.calls["reduce"],
        max_calls=run.cfg.max_calls,
    )
    result.usage = usage
    # a cited passage names its pages and section, as in basic, local and lazy (issue 58)
    for located in (result, *result.nodes):
        locate_result(located, run.scope.store)
    result.duration_s = round(time.monotonic() - started, 3)
    return result
