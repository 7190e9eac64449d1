"""What one auto search question can cost (`pipeline query auto --estimate`), phase by phase; the rules
are `pipeline.query.estimate`'s.

Auto hands the question to one routable mode, and which one is known only once it has routed, so its
bound is its own routing call (one `ROUTE` classification, unless the caller gave the route) plus the
dearest routable mode's phases. A mode whose tables the namespace lacks counts as lazy search, where auto
would send it (`auto.search`, rule 3); a routable mode with no estimate of its own is named in a note, not
silently left out of the bound.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipeline.llm.usage import DEFAULT_PRICES, estimate_cost
from pipeline.query.auto.route import ROUTE, route_hints, route_messages
from pipeline.query.auto.search import FALLBACK, AutoSearchConfig
from pipeline.query.common.mode import MODES, missing, routable
from pipeline.query.estimate import Asked, Phase, QueryEstimate, prompt_tokens


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: AutoSearchConfig) -> None:
    store, question, settings, _ = asked
    if config.settings is None:  # the routed modes' configs come from the settings being estimated
        config = replace(config, settings=settings)
    if config.route is None:
        # The model form's one classification call; offline the rules route, and `_finish` says so
        messages = route_messages(question, route_hints())
        limit = getattr(settings, f"llm_{ROUTE.limit}_max_tokens")  # `engine.llm.OutputLimits`' setting
        estimate.phases.append(Phase("route", 1, prompt_tokens(messages, settings.encoding), limit, "exact"))
    names = [config.route] if config.route is not None else routable()
    # Where auto would send each: the fallback for a mode whose tables are missing (sibling modes are
    # reached through the registry, never imported)
    sent = dict.fromkeys(FALLBACK if missing(store, MODES[n].needs) else n for n in names)
    unestimated = [n for n in sent if MODES[n].uses_model and MODES[n].estimate is None]
    found = [_mode_estimate(MODES[n], estimate, asked, config) for n in sent if MODES[n].estimate is not None]
    if found:
        dearest = max(found, key=lambda e: (_cost(e, settings), e.calls))
        estimate.phases.extend(dearest.phases)
        estimate.notes.extend(dearest.notes)
        estimate.routed = dearest.mode
        if len(found) > 1:
            estimate.notes.append(
                f"auto routes to one of {', '.join(e.mode for e in found)}: the dearest, {dearest.mode}, "
                "is counted"
            )
    if unestimated:
        estimate.notes.append(
            f"auto may also route to {', '.join(unestimated)}, which has no estimate: not counted above"
        )


def _mode_estimate(mode: Any, auto: QueryEstimate, asked: Asked, config: AutoSearchConfig) -> QueryEstimate:
    """Mode `mode`'s phases for the question, with the config auto would run it with."""
    found = QueryEstimate(mode.name, auto.namespace, auto.question, auto.model, auto.engine)
    mode.estimate(found, asked, config.config_of(mode))
    return found


def _cost(estimate: QueryEstimate, settings: Any) -> float:
    prices = {**DEFAULT_PRICES, **settings.llm_prices}
    return sum(
        estimate_cost(settings.llm_model, p.prompt_tokens, p.completion_tokens, prices)
        for p in estimate.phases
    )
