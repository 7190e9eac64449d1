"""Lazy search: LazyGraphRAG's query-time algorithm (Microsoft Research, November 2024) on any index.

Nothing is summarised at index time: no community reports are read. A question costs a fixed budget of
relevance tests instead:
1. the question is expanded into a few subqueries (`tasks.EXPAND`; offline: the question, its entities,
   its keywords);
2. each subquery ranks the text units (`tree.rank_units`) and through them the communities;
3. relevance tests spend the budget in community rank order, recursing into the sub-communities of a
   community that yielded relevant units (`relevance`, whose rules say how branches stop);
4. from each relevant unit its sentences closest to the subquery that found it are extracted (the words
   they share with it, then their order: no model call, no embedding, so extraction costs nothing but
   CPU), the units ranked by their rating and then their rank, and packed within the answer budget as a
   Sources table (`common.passage_answer.build_basic_context`); what budget the relevant units leave is
   filled with the best-ranked units no test reached (`fill_context`), never with one judged irrelevant;
5. the answer is basic search's task over that table, citing `[Data: Sources (n)]`, which resolve to the
   units' documents and offsets.

Calls per question: 1 expansion + at most `max_rate_calls` ratings + 1 answer = `max_calls` (the offline
engine makes none). Statuses: `completed`; `partial` when a rating call failed twice (its units stay
untested, `failures` says which community); `no_results` when no unit is relevant; `cancelled` when the
deadline passed or the caller cancelled. A model that failed every rating call, or was found down,
raises its LLMError: the question failed, which `no_results` never stands for.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.plain import plain
from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError
from pipeline.query.answer.answer_context import AnswerRequest
from pipeline.query.answer.citations import describe_context, resolve_citations
from pipeline.query.answer.context_events import context_sources, emit_context
from pipeline.query.answer.pages import locate_result
from pipeline.query.answer.passage_answer import BASIC_ANSWER, build_basic_context
from pipeline.query.common.options import require_counts
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.query.lazy.relevance import Probe, ProbeOptions, Tests, rate_call_cap, run_tests
from pipeline.query.lazy.tasks import EXPAND, RATE_UNITS, ExpandRequest, offline_subqueries
from pipeline.query.lazy.tree import load_tree, nearest_pieces, rank_units
from pipeline.query.retrieval.intent import STOPWORDS
from pipeline.query.retrieval.local_index import load_local_index
from pipeline.query.retrieval.passage_index import load_passage_index
from pipeline.settings.bound import FromSettings, setting

NOTHING_RELEVANT = "The index holds nothing relevant to this question."
_WORD = re.compile(r"[^\W_]+")


class LazySearchError(ValueError):
    """The request is invalid (e.g. a budget below 1)."""


class _Stopped(Exception):
    pass


@dataclass(frozen=True)
class LazySearchConfig(FromSettings):
    # Units rated per question. Microsoft's presets are 100 / 500 / 1,500 (its "Z100", "Z500",
    # "Z1500"); 100 was already on a par with GraphRAG's global search in its evaluation.
    budget: int = setting("lazy_budget")
    subqueries: int = setting("lazy_subqueries")
    # several units per rating call: one call per community visit
    units_per_call: int = setting("lazy_units_per_call")
    # a branch stops after this many irrelevant communities in a row
    max_irrelevant: int = setting("lazy_max_irrelevant")
    # 0-10; offline 2.0 is the calibration's `relevant` cosine (MiniLM: 0.25)
    threshold: float = setting("lazy_threshold")
    sentences_per_unit: int = 3  # extracted from a relevant unit (a short unit is kept whole)
    # Units each subquery ranks; only these are ever tested. Local search offers its 40 best passages to
    # its context; so does each subquery here (on MuSiQue-100: 187 gold passages in the contexts at 40,
    # 184 at 60, 172 at 200, where the community walk spent the tests on units ranked far down).
    ranking_depth: int = 40
    # the answer prompt, as basic and local search
    context_max_tokens: int = setting("local_context_max_tokens")
    encoding: str = setting("encoding")
    # The relevant units' sentences rarely fill the answer budget (offline about 33 units a question on
    # MuSiQue-100, ~3k of 12k tokens); what is left goes to the best-ranked units no test got to, after
    # every relevant one, marked untested. A unit a test judged irrelevant is never added.
    fill_context: bool = True

    def __post_init__(self) -> None:
        counts = ("budget", "subqueries", "units_per_call", "max_irrelevant", "sentences_per_unit")
        require_counts(self, LazySearchError, counts)
        if not 0 <= self.threshold <= 10:
            raise LazySearchError(f"threshold is 0-10, got {self.threshold!r}")

    @property
    def fill_depth(self) -> int:
        """Units of the question's ranking the fill may take: enough to fill the answer budget with short
        extracts (`sentences_per_unit` sentences of ~20 tokens). On MuSiQue-100 at 12,000 tokens (200
        units) the contexts held 206 gold passages, as many as local search's; 191 with the fill taken
        from the subqueries' 40 only, 188 without a fill (before issue 32's spaCy question parse; with
        it 205 against local's 206)."""
        return max(self.ranking_depth, -(-self.context_max_tokens // (20 * self.sentences_per_unit)))

    @property
    def max_rate_calls(self) -> int:
        return rate_call_cap(self.budget, self.subqueries, self.units_per_call)

    @property
    def max_calls(self) -> int:
        """The model calls one question can take: expansion, the rating cap, the answer."""
        return 1 + self.max_rate_calls + 1


@dataclass
class LazySearchResult:
    question: str
    status: str  # completed | partial | no_results | cancelled
    answer: str = ""
    subqueries: list[str] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)  # per subquery: tested, relevant, calls, ...
    units_tested: int = 0
    units_relevant: int = 0
    ratings: dict[str, float] = field(default_factory=dict)  # every unit tested -> its best rating
    # the relevant units, best first, then the untested ones that filled the budget (rating None)
    sources: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    unresolved_citations: list[str] = field(default_factory=list)
    quotes: list[dict[str, Any]] = field(default_factory=list)  # quoted sentences, their own page each
    context: dict[str, Any] = field(default_factory=dict)
    context_rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # counters, calls per phase, max_calls
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return plain(self)


def extract(text: str, subquery: str, keep: int) -> str:
    """The `keep` sentences of `text` sharing most words with `subquery`, in their order in the text."""
    from pipeline.core.sentences import split_sentences

    sentences = [s.clean for s in split_sentences(text)] or [" ".join(text.split())]
    if len(sentences) <= keep:
        return " ".join(sentences)
    words = {w for w in _WORD.findall(subquery.lower()) if w not in STOPWORDS}
    overlap = [len(words & set(_WORD.findall(s.lower()))) for s in sentences]
    best = sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))[:keep]
    return " … ".join(sentences[i] for i in sorted(best))


async def lazy_search_async(
    scope: QueryScope, question: str, config: LazySearchConfig = LazySearchConfig()
) -> LazySearchResult:
    started = start_clock(question)
    store, embedder = scope.store, scope.embedder
    result = LazySearchResult(question, "completed")
    calls = {"expand_calls": 0, "rate_calls": 0, "answer_calls": 0}

    def check() -> None:
        if scope.stopped():
            raise _Stopped("cancelled or deadline passed before the next call")

    try:
        graph = load_local_index(store)
        passages = load_passage_index(store, graph)
        tree = load_tree(store, graph, passages)
        if passages.n_units == 0:
            return _finish(
                result, scope, started, calls, config, "no_results", "the namespace has no text units"
            )
        check()
        calls["expand_calls"] = 1
        try:
            expansion = await scope.ask(EXPAND, ExpandRequest(question, config.subqueries))
            result.subqueries = expansion.subqueries or [question]
        except (LLMCancelledError, LLMTimeoutError):
            raise
        except LLMError as exc:  # a failed expansion searches as the offline one does: not fatal
            result.subqueries = offline_subqueries(question, config.subqueries)
            result.failures.append({"phase": "expand", "error": f"{type(exc).__name__}: {exc}"})
        rankings = rank_units(store, passages, embedder, result.subqueries, config.ranking_depth)

        async def rate(request: Any) -> Any:
            calls["rate_calls"] += 1
            return await scope.ask(RATE_UNITS, request)

        options = ProbeOptions(config.budget, config.units_per_call, config.max_irrelevant, config.threshold)
        tests = Tests(
            tree,
            lambda row: graph.text_units[passages.unit_ids[row]]["text"],
            lambda ranking, rows: nearest_pieces(passages, ranking, rows),
            rate,
            options,
            check,
        )
        probes = await run_tests(rankings, tests)
        _record_tests(result, probes, config)
        for probe in probes:
            for row, score in probe.tested.items():
                unit_id = passages.unit_ids[row]
                result.ratings[unit_id] = max(score, result.ratings.get(unit_id, score))
        chosen = _relevant_units(probes, rankings, config.threshold)
        errors = [p.error for p in probes if p.error is not None]
        if not chosen and result.units_tested == 0 and errors:
            raise errors[0]  # the model failed, not the index: an error, never no_results
        if not chosen:
            return _finish(result, scope, started, calls, config, "no_results", _why_none(result))
        if config.fill_context:
            tested = {row for p in probes for row in p.tested}
            # the question's own ranking, deeper than the tests went: the tests use most of the first 40
            deeper = rank_units(store, passages, embedder, [question], config.fill_depth)
            untested = _untested([*rankings, *deeper], tested)
            chosen += [(row, (None, subquery, rank)) for row, (subquery, rank) in untested]
        # Every unit offered to the context gets an equal share of the answer budget, at least
        # `sentences_per_unit` sentences (~20 tokens each): when the tests rated every unit (a small
        # corpus, nothing left to fill with), the few relevant ones are read nearly whole; with many
        # units, relevant and fill alike keep short extracts.
        share = max(config.sentences_per_unit, config.context_max_tokens // (20 * max(1, len(chosen))))
        sources = []
        for row, (score, subquery, rank) in chosen:
            unit = graph.text_units[passages.unit_ids[row]]
            sources.append(
                {
                    "text_unit_id": unit["id"],
                    "document_id": unit["document_id"],
                    "document_title": graph.document_titles.get(unit["document_id"]),
                    "start_char": unit["start_char"],
                    "end_char": unit["end_char"],
                    "rating": None if score is None else round(score, 2),  # None: untested, a fill
                    "subquery": subquery,
                    "rank": rank + 1,
                    "text": extract(unit["text"], subquery, share),
                }
            )
        context = build_basic_context(question, sources, config.context_max_tokens, config.encoding)
        packed = {row.id - 1 for row in context.rows}
        result.sources = [s for i, s in enumerate(sources) if s["rating"] is not None or i in packed]
        result.context, result.context_rows = describe_context(context)
        ratings = {"text_unit_id": {s["text_unit_id"]: s["rating"] for s in sources}}
        emit_context(scope, lambda: context_sources(context, ratings))
        check()
        calls["answer_calls"] = 1
        result.answer = await scope.ask(BASIC_ANSWER, AnswerRequest(question, context))
        result.citations, result.unresolved_citations = resolve_citations(result.answer, context)
        status = "partial" if any(f.get("community") is not None for f in result.failures) else "completed"
        reason = (
            f"{len(result.failures)} rating call(s) failed twice; their units stay untested"
            if status == "partial"
            else None
        )
        return _finish(result, scope, started, calls, config, status, reason)
    except (_Stopped, LLMCancelledError, LLMTimeoutError) as exc:
        if not isinstance(exc, _Stopped) and not scope.stopped():  # the server timed out: a failure
            raise
        result.answer = ""
        return _finish(result, scope, started, calls, config, "cancelled", str(exc))


def _record_tests(result: LazySearchResult, probes: list[Probe], config: LazySearchConfig) -> None:
    for p in probes:
        relevant = p.relevant(config.threshold)
        result.tests.append(
            {
                "subquery": p.subquery,
                "budget": p.budget,
                "tested": len(p.tested),
                "relevant": len(relevant),
                "communities_visited": p.visited,
                "rate_calls": p.calls,
                "stopped_branches": p.stopped_branches,
                "budget_spent": p.spent,
            }
        )
        result.failures += [{"subquery": p.subquery, **f} for f in p.failures]
    result.units_tested = sum(len(p.tested) for p in probes)
    result.units_relevant = len({r for p in probes for r in p.relevant(config.threshold)})


def _relevant_units(probes: list[Probe], rankings: list[Any], threshold: float) -> list[tuple[int, tuple]]:
    """Each relevant unit once, with its best rating and the subquery that gave it, best first (rating,
    then rank in that subquery's list; ordering by rank alone held the same gold passages on MuSiQue)."""
    best: dict[int, tuple[float, str, int]] = {}
    for probe, ranking in zip(probes, rankings, strict=True):
        for row, score in probe.relevant(threshold).items():
            candidate = (score, probe.subquery, ranking.rank[row])
            current = best.get(row)
            if current is None or (-candidate[0], candidate[2]) < (-current[0], current[2]):
                best[row] = candidate
    return sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][2], kv[0]))


def _untested(rankings: list[Any], tested: set[int]) -> list[tuple[int, tuple[str, int]]]:
    """The ranked units no test rated, each once: by their best rank over the subqueries, then the
    subqueries' order (so the fill takes each subquery's next unit in turn)."""
    best: dict[int, tuple[int, int, str]] = {}
    for i, ranking in enumerate(rankings):
        for row, rank in ranking.rank.items():
            if row not in tested and (row not in best or (rank, i) < best[row][:2]):
                best[row] = (rank, i, ranking.subquery)
    order = sorted(best.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0]))
    return [(row, (subquery, rank)) for row, (rank, _, subquery) in order]


def _why_none(result: LazySearchResult) -> str:
    if result.units_tested == 0 and result.failures:
        return "every rating call failed; nothing could be tested"
    return f"none of the {result.units_tested} units tested is relevant to the question"


def _finish(
    result: LazySearchResult,
    scope: QueryScope,
    started: float,
    calls: dict[str, int],
    config: LazySearchConfig,
    status: str,
    reason: str | None,
) -> LazySearchResult:
    result.status, result.reason = status, reason
    if status == "no_results":
        result.answer = NOTHING_RELEVANT
    locate_result(result, scope.store)
    result.usage = {**scope.usage(), **calls, "max_calls": config.max_calls}
    result.duration_s = round(time.monotonic() - started, 3)
    return result
