"""DRIFT's steps: its settings, the tree's nodes, the primer over the nearest community reports and a
follow-up answered by a local search (`pipeline.query.drift.search` runs them and reduces the tree)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pipeline.core import schema
from pipeline.core.tokens import count_tokens
from pipeline.io.store import NamespaceStore
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.answer_context import ContextRow, LocalContext
from pipeline.query.answer.citations import resolve_citations
from pipeline.query.answer.prompt_text import DEFAULT_RESPONSE_TYPE, skeleton_text
from pipeline.query.common.options import require_counts, require_level
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.tasks import (
    FOLLOW_UP,
    PRIMER,
    DriftStep,
    FollowUpRequest,
    PrimerReport,
    PrimerRequest,
    central_entities,
    follow_up_for,
    follow_up_messages,
)
from pipeline.query.retrieval.local_context import prompt_tokens
from pipeline.query.retrieval.local_index import LocalIndex
from pipeline.query.retrieval.local_retrieval import LocalSearchConfig, LocalSearchError, local_search_with
from pipeline.settings.bound import FromSettings, nested, setting

CENTRAL_ENTITIES = 3  # per primer report: the follow-ups it can lead to


class DriftSearchError(ValueError):
    """The request is invalid (a setting out of range, a community level the namespace lacks)."""


@dataclass(frozen=True)
class DriftSearchConfig(FromSettings):
    # reports the primer reads (Microsoft GraphRAG: drift_k_followups = 20)
    primer_k: int = setting("drift_primer_k")
    # primer calls, the reports split among them (primer_folds = 5)
    primer_folds: int = setting("drift_primer_folds")
    depth: int = setting("drift_depth")  # rounds of follow-ups (n_depth = 3)
    breadth: int = setting("drift_breadth")  # follow-ups answered per round (drift_k_followups = 20)
    follow_ups_per_step: int = 3  # follow-ups a step may propose
    concurrency: int = setting("drift_concurrency")  # calls in flight at once (concurrency = 32)
    community_level: int | None = None  # the primer's reports: None = every level
    # tokens of the reduce prompt: global search's setting, so the two reduces are sized alike
    reduce_budget: int = setting("global_reduce_budget")
    response_type: str = DEFAULT_RESPONSE_TYPE
    local: LocalSearchConfig = nested(LocalSearchConfig)  # the follow-ups' local search

    def __post_init__(self) -> None:
        positive = ("primer_k", "primer_folds", "breadth", "concurrency", "reduce_budget")
        require_counts(self, DriftSearchError, positive)
        require_counts(self, DriftSearchError, ("depth", "follow_ups_per_step"), minimum=0)
        require_level(self.community_level, DriftSearchError)

    @property
    def max_calls(self) -> int:
        """The most model calls one question costs: every fold, every follow-up of every round, the reduce."""
        return self.primer_folds + self.depth * self.breadth + 1


@dataclass
class DriftNode:
    id: int  # 0 is the primer
    parent: int | None
    depth: int  # 0: the primer; n: a follow-up answered in round n
    question: str
    status: str = "open"  # open (never run) | answered | no_results | failed | cancelled
    answer: str = ""
    score: float = 0.0
    follow_ups: list[str] = field(default_factory=list)  # what the step proposed
    children: list[int] = field(default_factory=list)
    communities: list[int] = field(default_factory=list)  # the reports it read (primer) or ranked
    citations: list[dict[str, Any]] = field(default_factory=list)
    unresolved_citations: list[str] = field(default_factory=list)
    error: str | None = None
    calls: int = 0
    duration_s: float = 0.0


class Cancelled(Exception):
    pass


class Run:
    """One question's tree, its calls per phase and the rows every step's context held."""

    def __init__(self, question: str, scope: QueryScope, cfg: DriftSearchConfig) -> None:
        self.question, self.scope, self.cfg = question, scope, cfg
        self.nodes: list[DriftNode] = []
        self.calls = {"primer": 0, "follow_up": 0, "reduce": 0}
        self.rows: dict[tuple[str, int], ContextRow] = {}
        self.asked: set[str] = {_key(question)}
        self.gate = asyncio.Semaphore(cfg.concurrency)
        self.failed_folds = 0
        self.first_error: Exception | None = None  # what the first failed step raised

    def failures(self) -> list[str]:
        """What failed: the primer's folds and the follow-ups, one line each."""
        out = [f"primer: {self.nodes[0].error}"] if self.failed_folds and self.nodes else []
        return out + [f"node {n.id}: {n.error}" for n in self.nodes if n.status == "failed" and n.id != 0]

    def add(self, parent: DriftNode | None, question: str) -> DriftNode:
        node = DriftNode(
            len(self.nodes), parent.id if parent else None, parent.depth + 1 if parent else 0, question
        )
        self.nodes.append(node)
        if parent is not None:
            parent.children.append(node.id)
        self.asked.add(_key(question))
        return node

    def propose(self, node: DriftNode, follow_ups: list[str]) -> None:
        """The step's new follow-ups, as open children while a round is left to answer them."""
        fresh = []
        for q in follow_ups:
            if q.strip() and _key(q) not in self.asked and len(fresh) < self.cfg.follow_ups_per_step:
                fresh.append(q.strip())
                self.asked.add(_key(q))
        node.follow_ups = fresh
        if node.depth < self.cfg.depth:
            for q in fresh:
                self.add(node, q)

    def remember(self, context: LocalContext) -> None:
        for row in context.rows:
            self.rows.setdefault((row.section, row.id), row)


def _key(question: str) -> str:
    return " ".join(question.lower().split())


def primer_reports(
    store: NamespaceStore, index: LocalIndex, vector: np.ndarray, cfg: DriftSearchConfig
) -> list[tuple[PrimerReport, float]]:
    """The `primer_k` reports nearest to the question vector, best first, with their cosines."""
    table = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS)  # TableNotFoundError when missing
    if table.count_rows() == 0:
        return []
    # The indexed rows carry the reports' text: the reports table is not read for k rows.
    columns = ["community", "title", "summary", "full_content", "_distance"]
    search = table.search(vector).metric("cosine").select(columns).limit(cfg.primer_k)
    if cfg.community_level is not None:
        search = search.where(f"level = {int(cfg.community_level)}", prefilter=True)
    out = []
    for row in search.to_list():
        community, similarity = int(row["community"]), 1.0 - float(row["_distance"])
        members = index.members(community)
        central = sorted(
            (m for m in members if m in index.entities),
            key=lambda m: (-len(index.neighbours.get(m, {})), index.entities[m]["title"]),
        )
        report = PrimerReport(
            community=community,
            title=row["title"] or f"Community {community}",
            text=row["full_content"] or row["summary"] or "",
            entities=[index.entities[m]["title"] for m in central[:CENTRAL_ENTITIES]],
        )
        out.append((report, similarity))
    return out


def split_folds(reports: list[PrimerReport], folds: int) -> list[list[PrimerReport]]:
    """Contiguous folds of nearly equal size, best reports in the first (numpy's array_split, as
    Microsoft GraphRAG splits them)."""
    n = min(folds, len(reports))
    size, extra = divmod(len(reports), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(reports[start:end])
        start = end
    return out


async def run_primer(run: Run, root: DriftNode, reports: list[PrimerReport]) -> None:
    started = time.monotonic()
    cfg, scope = run.cfg, run.scope

    async def fold(part: list[PrimerReport]) -> DriftStep | Exception:
        async with run.gate:
            if scope.stopped():
                return LLMCancelledError("cancelled before the primer fold started")
            run.calls["primer"] += 1
            root.calls += 1
            request = PrimerRequest(
                question=run.question, reports=part, max_follow_ups=cfg.follow_ups_per_step
            )
            try:
                return await scope.ask(PRIMER, request)
            except Exception as exc:  # noqa: BLE001 - one failed fold is one failed step, never the query's end
                return exc

    steps = await asyncio.gather(*(fold(part) for part in split_folds(reports, cfg.primer_folds)))
    for row in (
        ContextRow(
            section="reports", id=r.community, text=r.text, ref={"community": r.community, "title": r.title}
        )
        for r in reports
    ):
        run.rows.setdefault(("reports", row.id), row)
    root.communities = [r.community for r in reports]
    good = [s for s in steps if isinstance(s, DriftStep)]
    errors = [s for s in steps if not isinstance(s, DriftStep)]
    if any(isinstance(e, LLMCancelledError | LLMTimeoutError) for e in errors) and scope.stopped():
        root.status, root.error = "cancelled", str(errors[0])
        raise Cancelled(f"{scope.stopped()} during the primer")
    run.failed_folds = len(errors)
    run.first_error = run.first_error or next(iter(errors), None)
    if errors:
        root.error = "; ".join(f"fold failed ({type(e).__name__}: {e})" for e in errors)
    root.answer = "\n\n".join(s.answer.strip() for s in good if s.answer.strip())
    root.score = max((s.score for s in good), default=0.0)
    root.status = "answered" if good else "failed"
    proposed = [q for s in good for q in s.follow_up_queries]
    if not proposed:  # every fold failed or proposed nothing: the reports' central entities lead on
        proposed = [follow_up_for(e, run.question) for e in central_entities(reports, cfg.breadth)]
    run.propose(root, proposed)
    context = LocalContext(
        text="", rows=[run.rows[("reports", c)] for c in root.communities], budget=0, prompt_tokens=0
    )
    root.citations, root.unresolved_citations = resolve_citations(root.answer, context)
    root.duration_s = round(time.monotonic() - started, 3)


async def run_follow_up(run: Run, node: DriftNode) -> None:
    started = time.monotonic()
    scope = run.scope
    holder: dict[str, DriftStep] = {}
    local_cfg = run.cfg.local
    # The follow-up prompt is longer than the local answer's, around the same context: the context's
    # budget shrinks by the difference, so the prompt as sent stays within the local budget.
    extra = _follow_up_overhead(run.question, node.question, run.cfg)
    local_cfg = replace(local_cfg, context_max_tokens=max(1000, local_cfg.context_max_tokens - extra))

    async def answer(context: LocalContext) -> str:
        run.calls["follow_up"] += 1
        node.calls += 1
        request = FollowUpRequest(
            question=run.question,
            follow_up=node.question,
            context=context,
            max_follow_ups=run.cfg.follow_ups_per_step,
        )
        step = await scope.ask(FOLLOW_UP, request)
        holder["step"] = step
        return step.answer

    async with run.gate:
        if why := scope.stopped():
            node.status, node.error = "cancelled", f"{why} before the follow-up started"
            return
        try:
            result, context = await local_search_with(
                scope, node.question, local_cfg, answer, parse=False, select=False
            )
        except LocalSearchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed follow-up is a failed node, never the query's end
            node.status, node.error = "failed", f"{type(exc).__name__}: {exc}"
            run.first_error = run.first_error or exc
            node.duration_s = round(time.monotonic() - started, 3)
            return
    node.communities = [c["id"] for c in result.communities]
    node.duration_s = round(time.monotonic() - started, 3)
    if result.status == "cancelled":
        # All attempts timing out is the call's failure; the query is cancelled only by its own deadline.
        node.status = "cancelled" if scope.stopped() else "failed"
        node.error = result.reason
        return
    if result.status == "no_results" or "step" not in holder:
        node.status, node.error = "no_results", result.reason
        return
    step = holder["step"]
    node.status, node.answer, node.score = "answered", step.answer, step.score
    node.citations, node.unresolved_citations = result.citations, result.unresolved_citations
    if context is not None:
        run.remember(context)
    run.propose(node, step.follow_up_queries)


def _follow_up_overhead(question: str, follow_up: str, cfg: DriftSearchConfig) -> int:
    empty = LocalContext(text="", rows=[], budget=0, prompt_tokens=0)
    request = FollowUpRequest(
        question=question, follow_up=follow_up, context=empty, max_follow_ups=cfg.follow_ups_per_step
    )
    drift = count_tokens(skeleton_text(follow_up_messages(request)), cfg.local.encoding)
    return max(0, drift - prompt_tokens(follow_up, "", cfg.local.encoding))
