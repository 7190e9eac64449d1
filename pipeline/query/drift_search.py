"""DRIFT search (Dynamic Reasoning and Inference with Flexible Traversal): a primer over the community
reports nearest to the question, rounds of follow-up local searches, and a reduce of the whole tree.

Microsoft GraphRAG's flow, on our pieces:
1. **Primer**: the question is embedded and the `primer_k` community reports nearest to it (any level,
   or `community_level`) are split into `primer_folds` folds; each fold is one call (`Engine.drift_primer`)
   that answers, scores its answer 0-100 and proposes follow-up questions. The root node of the tree is
   the primer: its answer the folds' answers, its follow-ups theirs.
2. **Rounds**: `depth` times, the `breadth` open follow-ups with the best parent score are answered, each
   by a local search (`pipeline.query.local_search.local_search_with`, with the offline question parse
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
deadline passed, with the tree as far as it got.

Defaults start from Microsoft GraphRAG's (`DriftSearchDefaults`, graphrag 3.x: drift_k_followups=20
reports and follow-ups per round, primer_folds=5, n_depth=3, concurrency=32, local context 12,000
tokens): up to 5 + 3 x 20 + 1 = 66 calls per question. Ours answer in at most 2 + 2 x 3 + 1 = 9 calls,
which a laptop model serves in a minute; raise them per query or in settings.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.core.tokens import count_tokens
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, is_cancelled
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.drift_tasks import (
    DriftReduceRequest,
    DriftStep,
    FollowUpRequest,
    PrimerReport,
    PrimerRequest,
    StepAnswer,
    central_entities,
    follow_up_for,
    follow_up_messages,
    offline_reduce,
    reduce_block,
    reduce_messages,
)
from pipeline.query.global_tasks import DEFAULT_RESPONSE_TYPE
from pipeline.query.local_context import prompt_tokens, resolve_citations
from pipeline.query.local_index import LocalIndex, load_local_index
from pipeline.query.local_search import LocalSearchConfig, LocalSearchError, local_search_with
from pipeline.query.local_tasks import ContextRow, LocalContext

NO_RESULTS_ANSWER = "No relevant community reports were found for this question."
CENTRAL_ENTITIES = 3  # per primer report: the follow-ups it can lead to


class DriftSearchError(ValueError):
    """The request is invalid (a setting out of range, a community level the namespace lacks)."""


@dataclass(frozen=True)
class DriftSearchConfig:
    primer_k: int = 8  # reports the primer reads (Microsoft GraphRAG: drift_k_followups = 20)
    primer_folds: int = 2  # primer calls, the reports split among them (primer_folds = 5)
    depth: int = 2  # rounds of follow-ups (n_depth = 3)
    breadth: int = 3  # follow-ups answered per round (drift_k_followups = 20)
    follow_ups_per_step: int = 3  # follow-ups a step may propose
    concurrency: int = 4  # calls in flight at once (concurrency = 32)
    community_level: int | None = None  # the primer's reports: None = every level
    reduce_budget: int = 8000  # tokens of the reduce prompt, as global search's
    response_type: str = DEFAULT_RESPONSE_TYPE
    local: LocalSearchConfig = field(default_factory=LocalSearchConfig)  # the follow-ups' local search

    def __post_init__(self) -> None:
        for name in ("primer_k", "primer_folds", "breadth", "concurrency", "reduce_budget"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise DriftSearchError(f"{name} must be a positive integer, got {value!r}")
        for name in ("depth", "follow_ups_per_step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DriftSearchError(f"{name} must be a non-negative integer, got {value!r}")
        level = self.community_level
        if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level < 0):
            raise DriftSearchError(f"community level must be a non-negative integer, got {level!r}")

    @property
    def max_calls(self) -> int:
        """The most model calls one question costs: every fold, every follow-up of every round, the reduce."""
        return self.primer_folds + self.depth * self.breadth + 1

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> DriftSearchConfig:
        configured = {
            "primer_k": settings.drift_primer_k,
            "primer_folds": settings.drift_primer_folds,
            "depth": settings.drift_depth,
            "breadth": settings.drift_breadth,
            "concurrency": settings.drift_concurrency,
            "local": LocalSearchConfig.from_settings(settings),
        }
        return cls(**{**configured, **{k: v for k, v in overrides.items() if v is not None}})


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
    usage: dict[str, Any] = field(default_factory=dict)  # counters plus calls per phase and max_calls
    config: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def tree(self) -> dict[str, Any]:
        """The tree as nested outlines: id, question, status, score and children."""
        by_id = {n.id: n for n in self.nodes}

        def outline(node: DriftNode) -> dict[str, Any]:
            return {
                "id": node.id,
                "question": node.question,
                "status": node.status,
                "score": node.score,
                "children": [outline(by_id[c]) for c in node.children],
            }

        return outline(by_id[0]) if 0 in by_id else {}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tree"] = self.tree()
        return out


class _Cancelled(Exception):
    pass


class _Run:
    """One question's tree, its calls per phase and the rows every step's context held."""

    def __init__(self, question: str, engine: Engine, embedder: Embedder, cfg: DriftSearchConfig) -> None:
        self.question, self.engine, self.embedder, self.cfg = question, engine, embedder, cfg
        self.nodes: list[DriftNode] = []
        self.calls = {"primer": 0, "follow_up": 0, "reduce": 0}
        self.rows: dict[tuple[str, int], ContextRow] = {}
        self.asked: set[str] = {_key(question)}
        self.gate = asyncio.Semaphore(cfg.concurrency)
        self.failed_folds = 0

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


def _stopped(cancel: CancelSignal | None, deadline: float | None) -> str | None:
    if is_cancelled(cancel):
        return "cancelled"
    if deadline is not None and time.monotonic() >= deadline:
        return "deadline passed"
    return None


def primer_reports(
    store: NamespaceStore, index: LocalIndex, vector: np.ndarray, cfg: DriftSearchConfig
) -> list[tuple[PrimerReport, float]]:
    """The `primer_k` reports nearest to the question vector, best first, with their cosines."""
    table = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS)  # TableNotFoundError when missing
    if table.count_rows() == 0:
        return []
    search = table.search(vector).metric("cosine").select(["community", "_distance"]).limit(cfg.primer_k)
    if cfg.community_level is not None:
        search = search.where(f"level = {int(cfg.community_level)}", prefilter=True)
    hits = [(int(row["community"]), 1.0 - float(row["_distance"])) for row in search.to_list()]
    texts = _report_texts(store, [c for c, _ in hits])
    out = []
    for community, similarity in hits:
        members = index.members(community)
        central = sorted(
            (m for m in members if m in index.entities),
            key=lambda m: (-len(index.neighbours.get(m, {})), index.entities[m]["title"]),
        )
        known = index.reports.get(community, {})
        title, text = texts.get(community, (None, None))
        report = PrimerReport(
            community=community,
            title=title or known.get("title") or f"Community {community}",
            text=text or known.get("summary") or "",
            entities=[index.entities[m]["title"] for m in central[:CENTRAL_ENTITIES]],
        )
        out.append((report, similarity))
    return out


def _report_texts(store: NamespaceStore, communities: list[int]) -> dict[int, tuple[str, str]]:
    """(title, full report) of these communities, from the reports table (only their rows are kept)."""
    if not communities or not store.has_table(schema.COMMUNITY_REPORTS):
        return {}
    t = store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "title", "full_content", "summary"])
    t = t.filter(pc.is_in(t.column("community"), pa.array(communities, t.schema.field("community").type)))
    return {r["community"]: (r["title"], r["full_content"] or r["summary"]) for r in t.to_pylist()}


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


async def _primer(
    run: _Run,
    root: DriftNode,
    reports: list[PrimerReport],
    deadline: float | None,
    cancel: CancelSignal | None,
) -> None:
    started = time.monotonic()
    cfg = run.cfg

    async def fold(part: list[PrimerReport]) -> DriftStep | Exception:
        async with run.gate:
            if _stopped(cancel, deadline):
                return LLMCancelledError("cancelled before the primer fold started")
            run.calls["primer"] += 1
            root.calls += 1
            request = PrimerRequest(
                question=run.question, reports=part, max_follow_ups=cfg.follow_ups_per_step
            )
            try:
                return await run.engine.drift_primer(request, run.embedder, deadline=deadline, cancel=cancel)
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
    if any(isinstance(e, LLMCancelledError | LLMTimeoutError) for e in errors) and _stopped(cancel, deadline):
        root.status, root.error = "cancelled", str(errors[0])
        raise _Cancelled(f"{_stopped(cancel, deadline)} during the primer")
    run.failed_folds = len(errors)
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


async def _follow_up(
    run: _Run, store: NamespaceStore, node: DriftNode, deadline: float | None, cancel: CancelSignal | None
) -> None:
    started = time.monotonic()
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
        step = await run.engine.drift_follow_up(request, run.embedder, deadline=deadline, cancel=cancel)
        holder["step"] = step
        return step.answer

    async with run.gate:
        if why := _stopped(cancel, deadline):
            node.status, node.error = "cancelled", f"{why} before the follow-up started"
            return
        try:
            result, context = await local_search_with(
                store,
                node.question,
                run.engine,
                run.embedder,
                local_cfg,
                answer,
                deadline,
                cancel,
                parse=False,
                select=False,
            )
        except LocalSearchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed follow-up is a failed node, never the query's end
            node.status, node.error = "failed", f"{type(exc).__name__}: {exc}"
            node.duration_s = round(time.monotonic() - started, 3)
            return
    node.communities = [c["id"] for c in result.communities]
    node.duration_s = round(time.monotonic() - started, 3)
    if result.status == "cancelled":
        # All attempts timing out is the call's failure; the query is cancelled only by its own deadline.
        node.status = "cancelled" if _stopped(cancel, deadline) else "failed"
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
    drift = count_tokens("\n".join(m["content"] for m in follow_up_messages(request)), cfg.local.encoding)
    return max(0, drift - prompt_tokens(follow_up, "", cfg.local.encoding))


def _reduce_input(run: _Run) -> tuple[list[StepAnswer], str]:
    """The answered steps, best score first (the primer first among equals), that fit the reduce budget."""
    answered = sorted(
        (n for n in run.nodes if n.status == "answered" and n.answer.strip()), key=lambda n: (-n.score, n.id)
    )
    skeleton = "\n".join(m["content"] for m in reduce_messages(run.question, "", run.cfg.response_type))
    used = count_tokens(skeleton, run.cfg.local.encoding)
    chosen, blocks = [], []
    for n in answered:
        step = StepAnswer(question=n.question, answer=n.answer, score=n.score)
        block = reduce_block(step)
        cost = count_tokens(block + "\n\n", run.cfg.local.encoding)
        if used + cost <= run.cfg.reduce_budget:
            chosen.append(step)
            blocks.append(block)
            used += cost
    return chosen, "\n\n".join(blocks)


async def drift_search_async(
    store: NamespaceStore,
    question: str,
    engine: Engine,
    embedder: Embedder,
    cfg: DriftSearchConfig = DriftSearchConfig(),
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> DriftSearchResult:
    started = time.monotonic()
    if not question or not question.strip():
        raise ValueError("question must not be empty")
    result = DriftSearchResult(question, "completed", config=_config_row(cfg))
    run = _Run(question, engine, embedder, cfg)
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
        await _primer(run, root, [r for r, _ in hits], deadline, cancel)
        for _ in range(cfg.depth):
            open_nodes = sorted(
                (n for n in run.nodes if n.status == "open"),
                key=lambda n: (-run.nodes[n.parent].score if n.parent is not None else 0.0, n.id),
            )[: cfg.breadth]
            if not open_nodes:
                break
            if why := _stopped(cancel, deadline):
                raise _Cancelled(f"{why} before round {open_nodes[0].depth}")
            await asyncio.gather(*(_follow_up(run, store, n, deadline, cancel) for n in open_nodes))
            if any(n.status == "cancelled" for n in open_nodes):
                raise _Cancelled(
                    f"{_stopped(cancel, deadline) or 'cancelled'} during round {open_nodes[0].depth}"
                )
        await _reduce(run, result, deadline, cancel)
    except _Cancelled as exc:
        result.status, result.answer, result.reason = "cancelled", "", str(exc)
    return _finish(result, run, started)


async def _reduce(
    run: _Run, result: DriftSearchResult, deadline: float | None, cancel: CancelSignal | None
) -> None:
    failed = run.failures()
    result.failed_steps = run.failed_folds + sum(1 for n in run.nodes if n.status == "failed" and n.id != 0)
    chosen, context = _reduce_input(run)
    if not chosen:
        result.status, result.answer = "no_results", NO_RESULTS_ANSWER
        result.reason = (
            f"every step failed ({result.failed_steps}); first error: {failed[0]}"
            if failed
            else "no step found information relevant to the question"
        )
        return
    if why := _stopped(cancel, deadline):
        raise _Cancelled(f"{why} before the reduce")
    request = DriftReduceRequest(
        question=run.question, answers=chosen, context=context, response_type=run.cfg.response_type
    )
    result.status = "partial" if failed else "completed"
    run.calls["reduce"] += 1
    try:
        result.answer = await run.engine.drift_reduce(request, deadline=deadline, cancel=cancel)
    except (LLMCancelledError, LLMTimeoutError) as exc:
        if _stopped(cancel, deadline):
            raise _Cancelled(f"reduce stopped: {exc}") from None
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


def _finish(result: DriftSearchResult, run: _Run, started: float) -> DriftSearchResult:
    result.nodes = run.nodes
    usage = dict(run.engine.usage.counters())
    usage.update(
        primer_calls=run.calls["primer"],
        follow_up_calls=run.calls["follow_up"],
        reduce_calls=run.calls["reduce"],
        max_calls=run.cfg.max_calls,
    )
    result.usage = usage
    result.duration_s = round(time.monotonic() - started, 3)
    return result


def drift_search(
    namespace: str,
    question: str,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: DriftSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
    **overrides: Any,
) -> DriftSearchResult:
    """Answer a question with DRIFT for one namespace; `overrides` (primer_k, primer_folds, depth, breadth,
    community_level, response_type, ...) take precedence over `config`, which takes precedence over the
    configured defaults. The engine and embedder default to the configured ones."""
    from pipeline.runtime import query_runtime

    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    given = {k: v for k, v in overrides.items() if v is not None}
    cfg = (
        replace(config, **given)
        if config is not None
        else DriftSearchConfig.from_settings(rt.settings, **given)
    )
    return rt.engine.run_sync(
        drift_search_async(rt.store, question, rt.engine, rt.embedder, cfg, deadline, cancel)
    )
