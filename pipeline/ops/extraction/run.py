"""Extraction of a namespace's text units by the engine, one `UnitExtraction` per unit plus the failures.

The engine decides how a pack of units is extracted (the `EXTRACT_PACK` task in `task.py`: the NLP
extractor in `offline.py` or the LLM in `llm.py` and `packed.py`); this module groups the units into packs
(`packed.plan_packs`) and runs them over the table, in table order. It lives outside the
package's `__init__` because it names the engine's contract, which itself imports `models`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from pipeline.engine.base import Engine
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    ExtractionOptions,
    ExtractionRequest,
    UnitExtraction,
)
from pipeline.ops.extraction.packed import plan_packs
from pipeline.ops.extraction.processes import shutdown as shutdown_workers
from pipeline.ops.extraction.processes import workers_for
from pipeline.ops.extraction.task import EXTRACT, EXTRACT_PACK

PROGRESS_EVERY = 100  # units between progress reports


@dataclass
class ExtractionRun:
    method: str
    units: list[UnitExtraction]
    failures: list[ExtractionFailure] = field(default_factory=list)
    duration_s: float = 0.0


def extract_graph(
    text_units: pa.Table,
    options: ExtractionOptions,
    engine: Engine,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractionRun:
    """One UnitExtraction per text unit, in table order, by `engine` (from `pipeline.runtime.make_engine`)."""
    started = time.monotonic()
    identity = engine.identity(EXTRACT, options)
    rows = text_units.select(["id", "document_id", "text", "start_char"]).to_pylist()
    options = replace(options, processes=workers_for(options.processes, len(rows)))
    requests = [
        ExtractionRequest(row["text"], row["id"], row["document_id"], row["start_char"] or 0, options)
        for row in rows
    ]
    packs = plan_packs(requests, options.encoding, options.pack_tokens)
    done = 0

    async def one(pack: list[int]) -> list[tuple[UnitExtraction, ExtractionFailure | None]]:
        nonlocal done
        outcomes = await engine.run(EXTRACT_PACK, tuple(requests[i] for i in pack))
        before, done = done, done + len(pack)
        if progress and done // PROGRESS_EVERY > before // PROGRESS_EVERY:
            progress(done, len(rows))
        return outcomes

    try:
        by_pack = engine.run_batch(packs, one)
    finally:
        if options.processes > 1:
            shutdown_workers()  # their memory (spaCy in each) goes back before the next stage
    outcomes: list[Any] = [None] * len(rows)
    for pack, outcome in zip(packs, by_pack, strict=True):
        for k, i in enumerate(pack):
            outcomes[i] = outcome if isinstance(outcome, Exception) else outcome[k]
    units, failures = [], []
    for row, outcome in zip(rows, outcomes, strict=True):
        if isinstance(outcome, Exception):  # cancelled or past the deadline before it could finish
            failures.append(
                ExtractionFailure(row["id"], row["document_id"], 0, type(outcome).__name__, str(outcome))
            )
            units.append(
                UnitExtraction(row["id"], row["document_id"], identity.method, identity.version, "failed", 0)
            )
            continue
        unit, failure = outcome
        units.append(unit)
        if failure is not None:
            failures.append(failure)
    return ExtractionRun(identity.method, units, failures, time.monotonic() - started)
