"""Lazy search's relevance tests: a fixed budget of units rated, spent in community rank order.

Rules, per subquery (the budget and the call cap are shared out evenly between the subqueries, the
first ones taking the remainder; they run concurrently):
1. Communities are visited in rank order (`tree.Ranking.order`: by their best-ranked unit), roots first.
2. A visit rates the community's best untested ranked units, at most `units_per_call` in one call and
   never more than the budget left: the budget counts units rated, so it is never exceeded.
3. A community that yielded a relevant unit (rating >= `threshold`) is recursed into: its
   sub-communities are visited next, in their rank order, before its later siblings.
4. A visit that yields nothing relevant extends its branch's run of irrelevant communities; after
   `max_irrelevant` in a row the branch's remaining siblings are not visited (`stopped_branches`).
5. A failed rating call (anything but cancellation or the deadline) is retried once; if it fails again
   its units stay untested, the community is recorded in `failures` (the answer is then `partial`) and
   its run is not extended: a failure is never taken for irrelevance. A model server found down (not
   reachable, or hung: `LLMUnreachableError`, `LLMUnresponsiveError`) ends the tests at once: every
   later call would fail the same way.
6. Everything stops when the budget is spent, or at the call cap (`max_rate_calls`: partial batches and
   retries make a call carry fewer units than `units_per_call`; the cap keeps the calls bounded anyway).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError, LLMUnreachableError
from pipeline.query.lazy.tasks import RateUnitsRequest, UnitItem, UnitRatings
from pipeline.query.lazy.tree import CommunityTree, Ranking


def shares(total: int, n: int) -> list[int]:
    """`total` split into `n` near-equal shares, the first ones larger."""
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def rate_call_cap(budget: int, subqueries: int, units_per_call: int) -> int:
    """The rating calls of one question at most: twice the full batches each subquery's budget needs."""
    return sum(2 * math.ceil(b / units_per_call) for b in shares(budget, subqueries))


@dataclass
class Probe:
    """One subquery's tests."""

    subquery: str
    budget: int
    max_calls: int
    tested: dict[int, float] = field(default_factory=dict)  # unit row -> rating
    calls: int = 0
    visited: int = 0
    failures: list[dict] = field(default_factory=list)
    error: LLMError | None = None  # the first failed call's
    stopped_branches: int = 0
    budget_spent: bool = False

    @property
    def spent(self) -> bool:
        return len(self.tested) >= self.budget

    def relevant(self, threshold: float) -> dict[int, float]:
        return {r: s for r, s in self.tested.items() if s >= threshold}


Rater = Callable[[RateUnitsRequest], Awaitable[UnitRatings]]
Pieces = Callable[[Ranking, list[int]], list]


@dataclass(frozen=True)
class ProbeOptions:
    budget: int
    units_per_call: int
    max_irrelevant: int
    threshold: float


@dataclass(frozen=True)
class Tests:
    """What every probe of one question shares: the community tree, the units' texts and pieces, the
    rating call, the options, and `check()`, which raises once the query is cancelled."""

    tree: CommunityTree
    texts: Callable[[int], str]
    pieces: Pieces
    rate: Rater
    options: ProbeOptions
    check: Callable[[], None]


async def run_tests(rankings: list[Ranking], tests: Tests) -> list[Probe]:
    """Every subquery's probe after its tests."""
    options = tests.options
    n = len(rankings)
    budgets = shares(options.budget, n)
    caps = [2 * math.ceil(b / options.units_per_call) for b in budgets]
    probes = [Probe(r.subquery, b, c) for r, b, c in zip(rankings, budgets, caps, strict=True)]

    async def one(ranking: Ranking, probe: Probe) -> None:
        await _walk(ranking.order(tests.tree.roots, tests.tree), ranking, probe, tests)

    await asyncio.gather(*(one(r, p) for r, p in zip(rankings, probes, strict=True)))
    return probes


def _exhausted(probe: Probe) -> bool:
    if len(probe.tested) >= probe.budget:
        probe.budget_spent = True
    return probe.budget_spent or probe.calls >= probe.max_calls


async def _walk(communities: list[int], ranking: Ranking, probe: Probe, tests: Tests) -> None:
    tree, options = tests.tree, tests.options
    run = 0
    for community in communities:
        if _exhausted(probe):
            return
        if run >= options.max_irrelevant:
            probe.stopped_branches += 1
            return
        untested = sorted(
            (r for r in tree.units.get(community, []) if r in ranking.rank and r not in probe.tested),
            key=ranking.rank.__getitem__,
        )
        batch = untested[: min(options.units_per_call, probe.budget - len(probe.tested))]
        members = set(tree.units.get(community, []))
        yielded = any(s >= options.threshold for r, s in probe.tested.items() if r in members)
        if batch:
            probe.visited += 1
            outcome = await _rate(batch, ranking, probe, tests)
            if outcome is None:  # failed twice: untested, recorded, not counted as irrelevant
                probe.failures.append({"community": community, "units": len(batch)})
                continue
            yielded = yielded or any(s >= options.threshold for s in outcome.values())
        if yielded:
            run = 0
            below = ranking.order(tree.children.get(community, []), tree)
            await _walk(below, ranking, probe, tests)
        else:
            run += 1


async def _rate(batch: list[int], ranking: Ranking, probe: Probe, tests: Tests) -> dict[int, float] | None:
    """The ratings of `batch`'s units (those the reply rated), or None after two failed calls."""
    vectors = tests.pieces(ranking, batch)
    items = [
        UnitItem(i + 1, tests.texts(row), v) for i, (row, v) in enumerate(zip(batch, vectors, strict=True))
    ]
    request = RateUnitsRequest(ranking.subquery, items)
    for _attempt in range(2):
        if probe.calls >= probe.max_calls:
            return None
        tests.check()
        probe.calls += 1
        try:
            reply = await tests.rate(request)
        except (LLMCancelledError, LLMTimeoutError, LLMUnreachableError):
            raise
        except LLMError as exc:
            probe.error = probe.error or exc
            continue
        by_id = {r.id: r.score for r in reply.ratings}
        out = {row: float(by_id[i + 1]) for i, row in enumerate(batch) if i + 1 in by_id}
        probe.tested.update(out)
        return out
    return None
