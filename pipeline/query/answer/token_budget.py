"""What fits a token budget: the room a prompt has once its output reserve is set aside, and the blocks,
best first, that fit into it (basic and lazy search's sources, global search's map batches, DRIFT's
reduce)."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.core.tokens import count_tokens


class BudgetError(ValueError):
    """The token budget cannot hold the prompt (or a single line of a report) at all."""


def prompt_budget(budget: int, reserve: int) -> int:
    if budget <= 0 or reserve < 0:
        raise BudgetError(
            f"token budget must be positive and its reserve non-negative (got {budget}, {reserve})"
        )
    if budget <= reserve:
        raise BudgetError(f"token budget {budget} must exceed its output reserve {reserve}")
    return budget - reserve


def pack(blocks: Sequence[str], base: str, limit: int, encoding: str, sep: str = "\n\n") -> list[int]:
    """Indices of the blocks, in order, that fit within `limit` tokens after `base`, joined by `sep`. A
    block that does not fit is skipped, not fatal: a shorter one further down may still fit. Counted block
    by block (each once), then the joined text exactly, as tokens can merge across a join, dropping the
    last kept blocks if need be."""
    used = count_tokens(base, encoding)
    kept: list[int] = []
    for i, block in enumerate(blocks):
        cost = count_tokens(block + sep, encoding)
        if used + cost <= limit:
            kept.append(i)
            used += cost
    while kept and count_tokens(base + sep.join(blocks[i] for i in kept), encoding) > limit:
        kept.pop()
    return kept
