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
from pipeline.query.answer.token_budget import BudgetError, prompt_budget
from pipeline.query.global_.context import ReportContext
from pipeline.settings import default_of

WORST_CASE_PART = 9_999_999  # the header is measured with the widest part number so every part fits


@dataclass
class Batch:
    index: int
    content: str
    community_ids: list[int] = field(default_factory=list)
    tokens: int = 0  # prompt skeleton + content
    ranks: dict[int, float] = field(default_factory=dict)  # the reports' ranks, by community


def part_header(community: int, part: int) -> str:
    return f"[Community ID: {community} | summary part {part}]"


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
    budget: int = default_of("global_map_budget"),
    reserve: int = default_of("llm_map_max_tokens"),
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
