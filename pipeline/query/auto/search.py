"""Auto search: one entry point that routes each question to basic, local, global, DRIFT or lazy search.

Rules, in order:
1. A route given by the caller is taken as it is (`router: "given"`).
2. Otherwise the engine runs the `ROUTE` task (`auto.route`): with a model, one classification call
   (cached by the client); offline, rules and prototype similarity. A failed call (anything but
   cancellation or the deadline) falls back to the offline rules (`router: "offline"`, the error in
   `reason`).
3. A mode whose tables the namespace lacks is replaced by lazy search, which needs only text units and
   the graph: global needs community reports, DRIFT their vectors, local the entities.
4. Offline (the `ROUTE` task's offline form asks for it), unless the route was given or is global
   (summary wording: the whole collection), the three passage modes (basic, local, lazy) all run, which
   costs no model call, and `auto.compare` keeps one: the context whose best passage holds most of the
   question (its words weighted by rarity), then the one whose whole context holds most of its words,
   then basic, local (`compared`: each one's scores). The question's form cannot tell which of them
   suits a corpus: on MuSiQue-100 local's entity graph reaches the second hop that basic's passages
   miss (answer coverage 91.5 vs 70.6), on GraphRAG-Bench novel split A basic leads (81.2 vs 79.2),
   and routing by form stayed below the best mode on both. What each context shows of the question is
   what auto can see.
5. The chosen mode runs with its configured defaults; its whole result is `result`, its status and
   answer are repeated at the top, with `route` and `reason`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.plain import plain
from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError
from pipeline.query.auto.compare import keep, mode_scores
from pipeline.query.auto.route import (
    ROUTE,
    ComparedRoute,
    RouteChoice,
    RouteRequest,
    offline_route,
    route_hints,
)
from pipeline.query.common import events
from pipeline.query.common.mode import Mode, missing
from pipeline.query.common.scope import QueryScope, start_clock
from pipeline.settings import Settings

FALLBACK = "lazy"  # rule 3: needs only the text units and the graph's communities


@dataclass(frozen=True)
class AutoSearchConfig:
    """The route (None: classify), and what the routed mode's config is built from: its own config in
    `configs` when given, else `settings` (None: the settings' defaults)."""

    route: str | None = None
    settings: Any = None
    configs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> AutoSearchConfig:
        return cls(route=overrides.get("route"), settings=settings)

    def config_of(self, mode: Mode) -> Any:
        if mode.name in self.configs:
            return self.configs[mode.name]
        return mode.configure(self.settings if self.settings is not None else Settings(), {})


@dataclass
class AutoSearchResult:
    question: str
    route: str
    reason: str
    router: str  # given | llm | offline
    status: str = ""
    answer: str = ""
    result: dict[str, Any] = field(default_factory=dict)  # the routed mode's result
    # offline (rule 4): mode -> its scores (`compare.context_scores`: best passage, whole context)
    compared: dict[str, dict[str, float]] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return plain(self)


def _lacks(scope: QueryScope, route: str) -> list[str]:
    """The tables mode `route` reads that the namespace lacks (all of them if no such mode is known)."""
    mode = scope.modes.get(route)
    return missing(scope.store, mode.needs) if mode is not None else [f"{route} search"]


async def choose_route(scope: QueryScope, question: str, config: AutoSearchConfig) -> tuple[RouteChoice, str]:
    """The route and why (rules 1-3), and who chose it."""
    if config.route is not None:
        # Any routable mode of the scope's registry (a toy or plug-in one too)
        if not getattr(scope.modes.get(config.route), "routable", False):
            routes = ", ".join(n for n, m in scope.modes.items() if m.routable)
            raise ValueError(f"route must be a routable query mode: {routes}; not {config.route!r}")
        given = RouteChoice.model_construct(route=config.route, reason="route given by the caller")
        choice, router = given, "given"
    else:
        try:
            choice = await scope.ask(ROUTE, RouteRequest(question, route_hints(scope.modes)))
            router = scope.engine.kind  # llm | offline: who classified, for the result (never branched on)
        except (LLMCancelledError, LLMTimeoutError):
            raise
        except LLMError as exc:
            choice = offline_route(question, scope.embedder, route_hints(scope.modes))
            choice = RouteChoice(
                route=choice.route, reason=f"{choice.reason} (classification failed: {exc})"[:400]
            )
            router = "offline"
    if lacks := _lacks(scope, choice.route):
        reason = f"{choice.reason}; the namespace has no {lacks[0]}, so {FALLBACK} search"[:400]
        choice = RouteChoice(route=FALLBACK, reason=reason)
    return choice, router


async def run_mode(route: str, scope: QueryScope, question: str, config: AutoSearchConfig) -> Any:
    """Mode `route`'s search, found in the scope's modes (the registry), with its config from `config`:
    where auto and `pipeline eval` both send a question."""
    mode = scope.modes.get(route)
    if mode is None:
        known = ", ".join(scope.modes) or "none: build the scope with pipeline.query.registry.scope"
        raise ValueError(f"no query mode {route!r} in this scope (modes: {known})")
    return await mode.search(scope, question, config.config_of(mode))


async def auto_search_async(
    scope: QueryScope, question: str, config: AutoSearchConfig = AutoSearchConfig()
) -> AutoSearchResult:
    started = start_clock(question)
    try:
        choice, router = await choose_route(scope, question, config)
    except (LLMCancelledError, LLMTimeoutError) as exc:
        if not scope.stopped():  # the server timed out, the question did not: its failure
            raise
        out = AutoSearchResult(question, "", str(exc), scope.engine.kind, status="cancelled")
        out.usage = scope.usage()
        return out
    route, reason = choice.route, choice.reason
    compared: dict[str, dict[str, float]] = {}
    if isinstance(choice, ComparedRoute) and choice.compare:  # the offline form's (rule 4)
        route, reason, inner, compared = await _compare(scope, question, config, reason, choice.compare)
    else:
        scope.emit(events.ROUTE, mode="auto", route=route, reason=reason)
        inner = (await run_mode(route, scope, question, config)).to_dict()
    return AutoSearchResult(
        question,
        route,
        reason,
        router,
        status=inner.get("status", ""),
        answer=inner.get("answer", ""),
        result=inner,
        compared=compared,
        usage=scope.usage(),
        duration_s=round(time.monotonic() - started, 3),
    )


async def _compare(
    scope: QueryScope, question: str, config: AutoSearchConfig, reason: str, modes: tuple[str, ...]
) -> tuple[str, str, dict[str, Any], dict[str, dict[str, float]]]:
    """Rule 4: the passage modes' results, and the one `compare.keep` keeps."""
    results: dict[str, dict[str, Any]] = {}
    scores: dict[str, dict[str, float]] = {}
    heard: dict[str, list[tuple[str, dict[str, Any]]]] = {}  # each mode's events, sent for the one kept
    for mode in modes:
        if _lacks(scope, mode):
            continue
        recording, heard[mode] = scope.recording()
        results[mode] = (await run_mode(mode, recording, question, config)).to_dict()
        if results[mode].get("status") == "cancelled":
            break
        scores[mode] = mode_scores(scope.modes[mode], question, results[mode], scope.store)
    best = keep(scores) if scores else next(iter(results))
    got = scores.get(best, {"best_passage": 0.0, "context": 0.0})
    why = (
        f"{reason}; offline, {best}'s context held the most of the question in one passage "
        f"({got['best_passage']:.0%} by weight; {got['context']:.0%} of its words in the whole context)"
    )[:400]
    scope.emit(events.ROUTE, mode="auto", route=best, reason=why)
    scope.replay(heard[best])
    return best, why, results[best], scores
