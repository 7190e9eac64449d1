"""Usage accounting: what the LLM layer did and what it cost, ready to become Dagster metadata."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

# USD per million tokens: (prompt, completion). Public list prices; override with PIPELINE_LLM_PRICES.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
}


def estimate_cost(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, tuple[float, float]]
) -> float:
    """Cost in USD; a model missing from the price table (a local server, say) costs nothing."""
    price_in, price_out = prices.get(model, (0.0, 0.0))
    return (prompt_tokens * price_in + completion_tokens * price_out) / 1_000_000


@dataclass
class Usage:
    """Counters shared by every call of a run; `add` is safe from threads and from concurrent tasks.

    `calls` counts logical calls answered by the server, `requests` every HTTP request sent (retries
    included), `cache_hits` calls answered from the cache, `failures` calls that ended in an LLMError,
    `truncations` replies cut off at max_tokens (each asked again or failed, never used).
    `budget_refusals` counts calls not sent because the run's spend had reached its budget
    (`pipeline.llm.budget`). `reasoning_tokens` is the part of `completion_tokens` a thinking model
    spent before its answer (`pipeline.llm.reply`).
    """

    calls: int = 0
    requests: int = 0
    retries: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    failures: int = 0
    truncations: int = 0
    budget_refusals: int = 0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def merge(self, other: Usage) -> None:
        self.add(**other.counters())

    def counters(self) -> dict[str, Any]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}

    def as_metadata(self, prefix: str = "llm_") -> dict[str, Any]:
        """Flat name -> number mapping, e.g. for `MaterializeResult(metadata=...)`."""
        out = {prefix + k: v for k, v in self.counters().items()}
        out[prefix + "cost_usd"] = round(out[prefix + "cost_usd"], 6)
        out[prefix + "budget_reached"] = out[prefix + "budget_refusals"] > 0
        return out

    def __getstate__(self) -> dict[str, Any]:
        return self.counters()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)
