"""Which community reports global search maps: all of one level (static), the deepest level that fits a
number of map calls (`level="auto"`), or those rated relevant top-down (dynamic selection).

Dynamic selection (Microsoft GraphRAG's `dynamic_community_selection`, with its cost bounded):
1. The root communities' reports are queued, nearest to the question first (the cosine of the question to
   each report's indexed vector: free, it only orders the queue), then by rank.
2. `rate_batch_size` reports per call are rated 0-10 (`Engine.rate_reports`; offline, that same cosine on
   the map answers' usefulness scale), `map_concurrency` calls at a time, until the queue is empty or
   `max_rated` reports were rated. A report rated `rate_threshold` or more is kept and its children are
   queued; a kept child replaces its parent (it is the more specific report), as `keep_parent=False`
   does in Microsoft GraphRAG.
3. A rating call that fails (after the client's retries and one repair) keeps every report it held,
   without descending: a failure never loses a branch silently; they are counted in `failed_ratings`.
4. A broad question, one that names nothing but the collection itself ("what are the main topics
   covered by these passages?": no name, and every content word in `COLLECTION_WORDS`), is not rated:
   every top-level report is relevant to it, so the root reports are mapped, highest rank first (the
   corpus's largest themes answer it). No report is close to such a question, so a rating (offline,
   by similarity) would pick reports by accident. A question about one topic maps only the reports
   rated relevant to it, so fewer; when none is, there is nothing to map (`no_results`).
5. The kept reports, best rated first, are mapped within `max_map_batches` batches: those that do not fit
   are left out (counted in `dropped`).

So a question costs at most ceil(max_rated / rate_batch_size) rating calls, `max_map_batches` map calls
and one reduce, whatever the size of the corpus.
"""

from __future__ import annotations

import asyncio
import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.core import schema
from pipeline.core.plain import attributes
from pipeline.core.tokens import count_tokens
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.llm.batch import CancelSignal, stopped
from pipeline.llm.errors import LLMCancelledError, LLMTimeoutError
from pipeline.query.answer.token_budget import prompt_budget
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.caches.vector_cache import column_matrix
from pipeline.query.global_.batches import Batch, build_batches
from pipeline.query.global_.context import LevelNotFoundError, ReportContext, load_report_contexts
from pipeline.query.global_.selection_tasks import RateItem, RateRequest
from pipeline.query.retrieval.intent import is_broad

FILL = 0.9  # of a batch's room, when packing is estimated from the reports' own token counts


class SelectionCancelled(Exception):
    """The caller cancelled, or the deadline passed, while reports were being rated."""


@dataclass
class Selection:
    mode: str  # static | level-auto | dynamic
    level: int | None  # static and level-auto: the level mapped (None: leaf communities)
    communities: list[int] = field(default_factory=list)  # the reports to map, best first (dynamic)
    rated: int = 0
    kept: int = 0
    failed_ratings: int = 0  # reports whose rating call failed (kept, not descended into)
    rate_calls: int = 0
    mapped_reports: int = 0
    dropped: int = 0  # kept reports that did not fit `max_map_batches`
    fallback: str | None = None

    def to_dict(self) -> dict[str, Any]:
        # The counts and choices; `communities` (the ids themselves) stays out of the summary.
        return attributes(
            self,
            "mode",
            "level",
            "rated",
            "kept",
            "failed_ratings",
            "rate_calls",
            "mapped_reports",
            "dropped",
            "fallback",
        )


def community_count(store: NamespaceStore) -> int:
    try:
        return len(community_tree(store).parent)
    except TableNotFoundError as exc:
        raise TableNotFoundError(f"{exc} (global search needs community reports)") from None


def fit_batches(
    reports: list[ReportContext], skeleton: str, config: Any, max_batches: int | None
) -> tuple[list[Batch], int]:
    """Batches of the reports in order, the first ones that fit `max_batches` (None: all); and how many
    were left out. Packing is estimated from each report's own tokens, then checked by the real packer."""
    if max_batches is None or not reports:
        return build_batches(
            reports, skeleton, config.map_budget, config.map_reserve, config.seed, config.encoding
        ), 0
    room = (
        prompt_budget(config.map_budget, config.map_reserve) - count_tokens(skeleton, config.encoding)
    ) * FILL
    total, n = 0.0, 0
    for report in reports:
        total += count_tokens(report.text, config.encoding) + 16  # its part header and joins
        if math.ceil(total / room) > max_batches:
            break
        n += 1
    n = max(n, 1)
    while True:
        batches = build_batches(
            reports[:n], skeleton, config.map_budget, config.map_reserve, config.seed, config.encoding
        )
        if len(batches) <= max_batches or n == 1:
            return batches, len(reports) - n
        n = max(1, int(n * 0.9))


def auto_level(store: NamespaceStore, skeleton: str, config: Any) -> tuple[int, list[Batch], int]:
    """The deepest level whose reports fit `max_map_batches`; else level 0, its highest-ranked reports
    that fit. Returns (level, batches, reports left out)."""
    levels = sorted({r["level"] for r in store.read_table(schema.COMMUNITIES, columns=["level"]).to_pylist()})
    if not levels:
        return 0, [], 0
    for level in reversed(levels):  # ends on levels[0], whose reports the fallback takes
        reports = load_report_contexts(store, level)
        batches = build_batches(
            reports, skeleton, config.map_budget, config.map_reserve, config.seed, config.encoding
        )
        if len(batches) <= config.max_map_batches:
            return level, batches, 0
    top = sorted(reports, key=lambda r: (-r.rank, r.community))
    batches, dropped = fit_batches(top, skeleton, config, config.max_map_batches)
    return levels[0], batches, dropped


@dataclass
class _Tree:
    parent: dict[int, int]
    children: dict[int, list[int]]
    rank: dict[int, float]
    title: dict[int, str]
    summary: dict[int, str]
    vector: dict[int, np.ndarray]
    roots: list[int]


def community_tree(store: NamespaceStore) -> _Tree:
    """The namespace's community tree with its reports' vectors, read once per version of its tables
    (a question reads it to choose the mode, then to rate)."""
    versions = table_versions(
        store,
        parquet=(schema.COMMUNITIES, schema.COMMUNITY_REPORTS),
        lance=(schema.LANCE_COMMUNITY_REPORTS,),
    )
    return cached_index(store, "community_tree", versions, lambda: _tree(store))


def _tree(store: NamespaceStore) -> _Tree:
    communities = store.read_table(
        schema.COMMUNITIES, columns=["community", "level", "parent", "children"]
    ).to_pylist()
    reports = store.read_table(
        schema.COMMUNITY_REPORTS, columns=["community", "title", "summary", "rank"]
    ).to_pylist()
    has = {r["community"] for r in reports}
    vectors: dict[int, np.ndarray] = {}
    if store.has_lance_table(schema.LANCE_COMMUNITY_REPORTS):
        table = (
            store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS).to_arrow().select(["community", "vector"])
        )
        if table.num_rows:
            matrix = column_matrix(table.column("vector"))
            vectors = dict(zip(table.column("community").to_pylist(), matrix, strict=True))
    return _Tree(
        parent={c["community"]: c["parent"] for c in communities},
        children={c["community"]: [x for x in c["children"] or [] if x in has] for c in communities},
        rank={r["community"]: float(r["rank"] or 0.0) for r in reports},
        title={r["community"]: r["title"] or "" for r in reports},
        summary={r["community"]: r["summary"] or "" for r in reports},
        vector=vectors,
        roots=sorted(c["community"] for c in communities if c["level"] == 0 and c["community"] in has),
    )


async def select_dynamic(
    store: NamespaceStore,
    question: str,
    tasks: Any,
    config: Any,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> Selection:
    """The reports to map, rated top-down (module docstring); `tasks` is the search's `GlobalTasks`."""
    tree = community_tree(store)
    selection = Selection("dynamic", None)
    if not tree.roots:
        return selection
    if is_broad(question):
        selection.fallback = (
            "a broad question (it names only the collection): the top-level reports, highest rank first"
        )
        selection.communities = sorted(tree.roots, key=lambda c: (-tree.rank.get(c, 0.0), c))
        return selection
    q = tasks.embedder.embed([question])[0] if tasks.embedder is not None else None

    def cosine(c: int) -> float:
        v = tree.vector.get(c)
        return float(v @ q) if v is not None and q is not None else 0.0

    heap = [(-cosine(c), -tree.rank.get(c, 0.0), c) for c in tree.roots]
    heapq.heapify(heap)
    kept: dict[int, float] = {}
    while heap and selection.rated < config.max_rated:
        if why := stopped(cancel, deadline):
            raise SelectionCancelled(f"{why} while rating reports")
        wave: list[list[int]] = []
        while heap and len(wave) < max(1, config.map_concurrency):
            room = config.max_rated - selection.rated - sum(len(b) for b in wave)
            if room <= 0:
                break
            batch = [heapq.heappop(heap)[2] for _ in range(min(config.rate_batch_size, room, len(heap)))]
            wave.append(batch)
        answers = await asyncio.gather(*(_rate(tasks, question, tree, b, deadline, cancel) for b in wave))
        for batch, scores in zip(wave, answers, strict=True):
            selection.rate_calls += 1
            for c in batch:
                selection.rated += 1
                score = scores.get(c) if scores is not None else None
                if score is None:  # no rating: keep the report, do not descend into what is unknown
                    selection.failed_ratings += 1
                    kept[c] = config.rate_threshold
                    continue
                if score < config.rate_threshold:
                    continue
                kept[c] = score
                if not config.keep_parent:
                    kept.pop(tree.parent.get(c, -1), None)
                for child in tree.children.get(c, []):
                    heapq.heappush(heap, (-cosine(child), -tree.rank.get(child, 0.0), child))
    order = sorted(kept, key=lambda c: (-kept[c], -tree.rank.get(c, 0.0), c))
    selection.kept = len(kept)
    selection.communities = order
    return selection


async def _rate(
    tasks: Any,
    question: str,
    tree: _Tree,
    batch: list[int],
    deadline: float | None,
    cancel: CancelSignal | None,
) -> dict[int, float] | None:
    """community -> rating for the reports of one call; None when the call failed."""
    items = [
        RateItem(
            community=c,
            title=tree.title.get(c, ""),
            summary=tree.summary.get(c, ""),
            vector=tree.vector[c].tolist() if c in tree.vector else None,
        )
        for c in batch
    ]
    try:
        answer = await tasks.rate(RateRequest(question=question, reports=items), deadline, cancel)
    except (LLMCancelledError, LLMTimeoutError):
        if stopped(cancel, deadline):
            raise SelectionCancelled("cancelled while rating reports") from None
        return None
    except Exception:  # noqa: BLE001 - a failed rating keeps its reports (counted), never ends the search
        return None
    asked = set(batch)
    return {r.community: r.score for r in answer.ratings if r.community in asked}


def contexts_in_order(store: NamespaceStore, communities: list[int]) -> list[ReportContext]:
    """The map contexts of these communities' reports, in the given order."""
    by_id = {r.community: r for r in load_report_contexts(store, only=communities)}
    return [by_id[c] for c in communities if c in by_id]


__all__ = [
    "LevelNotFoundError",
    "Selection",
    "SelectionCancelled",
    "auto_level",
    "community_count",
    "contexts_in_order",
    "fit_batches",
    "select_dynamic",
]
