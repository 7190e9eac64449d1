"""The metadata every indexing asset reports, so a run can be read the same way at every step.

Each materialization carries `rows`, the LLM counters of `pipeline.llm.Usage` (`llm_calls`,
`llm_cache_hits`, tokens, `llm_cost_usd`; zeros for a step that calls no model, so a dashboard or a
sum over a run never has a gap) and `duration_s`.
"""

from __future__ import annotations

import time
from typing import Any

from pipeline.llm.usage import Usage


def standard_metadata(started: float, rows: int, usage: Usage | None = None) -> dict[str, Any]:
    """`started` is a time.monotonic() taken when the asset began."""
    return {
        "rows": rows,
        **(usage if usage is not None else Usage()).as_metadata(),
        "duration_s": round(time.monotonic() - started, 3),
    }
