"""Token-budgeted batches of community reports for the global map step.

graphrag-ts's summaryBatcher, with a real tokenizer instead of a character estimate and a seeded
shuffle instead of Math.random: reports are shuffled, split into labeled parts when one is too large
for a batch, and packed next-fit so that the map prompt plus a batch never exceeds the budget.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.core.token_windows import token_windows
from pipeline.core.tokens import DEFAULT_ENCODING, count_tokens
from pipeline.query.global_.context import ReportContext

WORST_CASE_PART = 9_999_999  # the header is measured with the widest part number so every part fits


class BudgetError(ValueError):
    """The token budget cannot hold the prompt (or a single line of a report) at all."""


@dataclass
class Batch:
    index: int
    content: str
    community_ids: list[int] = field(default_factory=list)
    tokens: int = 0  # prompt skeleton + content
    ranks: dict[int, float] = field(default_factory=dict)  # the reports' ranks, by community


def part_header(community: int, part: int) -> str:
    return f"[Community ID: {community} | summary part {part}]"


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


def split_report(
    report: ReportContext, skeleton_tokens: int, limit: int, encoding: str = DEFAULT_ENCODING
) -> list[str]:
    """The report as one or more labeled parts, each fitting in a batch alongside the skeleton."""
    header_tokens = count_tokens(part_header(report.community, WORST_CASE_PART) + "\n", encoding)
    room = limit - skeleton_tokens - header_tokens - 2  # the joining newlines
    if room < 8:
        raise BudgetError(
            f"map token budget is too small for community report {report.community}: "
            f"{limit} tokens leave {room} after the prompt ({skeleton_tokens}) and the part header"
        )
    # Token windows with exact character offsets; re-merging at a boundary can cost a token or two,
    # so windows are sized with a small margin and every part is re-checked below.
    size = max(4, room - 4)
    pieces = [report.text[a:b] for a, b, _ in token_windows(report.text, size, 0, encoding)] or [report.text]
    return [f"{part_header(report.community, n)}\n{text}" for n, text in enumerate(pieces, start=1)]


def build_batches(
    reports: Sequence[ReportContext],
    skeleton: str,
    budget: int = 8000,
    reserve: int = 512,
    seed: int | None = 0,
    encoding: str = DEFAULT_ENCODING,
) -> list[Batch]:
    """Shuffle (seeded), split and pack reports; `skeleton` is the map prompt with empty content."""
    limit = prompt_budget(budget, reserve)
    skeleton_tokens = count_tokens(skeleton, encoding)
    if skeleton_tokens >= limit:
        raise BudgetError(f"map token budget cannot fit the map prompt ({skeleton_tokens} tokens > {limit})")
    order = list(reports)
    random.Random(seed).shuffle(order)

    def size(content: str) -> int:
        return count_tokens(skeleton + "\n" + content, encoding)

    batches: list[Batch] = []
    current: list[str] = []
    current_ids: list[int] = []
    rank = {r.community: r.rank for r in reports}

    def flush() -> None:
        if current:
            content = "\n".join(current)
            ids = list(dict.fromkeys(current_ids))
            batches.append(Batch(len(batches), content, ids, size(content), {c: rank[c] for c in ids}))
            current.clear()
            current_ids.clear()

    for report in order:
        for part in split_report(report, skeleton_tokens, limit, encoding):
            if size(part) > limit:
                raise BudgetError(
                    f"a part of community report {report.community} does not fit the map budget"
                )
            if current and size("\n".join([*current, part])) > limit:
                flush()
            current.append(part)
            current_ids.append(report.community)
    flush()
    return batches
