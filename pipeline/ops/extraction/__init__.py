"""Entity / relationship / claim extraction over a namespace's text units.

`extract_graph(text_units, settings, engine)` runs the offline rules (`offline.py`, the default) or the
LLM (`llm.py`) on every text unit and returns one `UnitExtraction` per unit plus the failures;
`table.py` turns them into the `extracted_graph` and `failed_extractions` tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.ops.extraction.llm import LLMExtractionConfig, extract_unit_llm
from pipeline.ops.extraction.models import GENERIC_TYPE, ExtractionFailure, UnitExtraction
from pipeline.ops.extraction.offline import OFFLINE_VERSION, extract_unit
from pipeline.ops.extraction.table import failures_table, from_table, to_table

__all__ = [
    "GENERIC_TYPE",
    "OFFLINE_VERSION",
    "ExtractionFailure",
    "ExtractionRun",
    "UnitExtraction",
    "extract_graph",
    "extract_unit",
    "failures_table",
    "from_table",
    "to_table",
]


@dataclass
class ExtractionRun:
    method: str
    units: list[UnitExtraction]
    failures: list[ExtractionFailure] = field(default_factory=list)
    duration_s: float = 0.0

    def counts(self) -> dict[str, int]:
        return {
            "text_units": len(self.units),
            "entity_mentions": sum(len(u.entities) for u in self.units),
            "relationship_mentions": sum(len(u.relationships) for u in self.units),
            "claims": sum(len(u.claims) for u in self.units),
            "failed_text_units": sum(1 for u in self.units if u.status == "failed"),
            "partial_text_units": sum(1 for u in self.units if u.status == "partial"),
            "gleaning_rounds_used": sum(max(u.rounds - 1, 0) for u in self.units),
        }


def extract_graph(
    text_units: pa.Table,
    settings: Any,
    engine: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractionRun:
    """One UnitExtraction per text unit, in table order. `engine` from pipeline.llm.make_engine; None or
    an offline engine selects the rule-based extractor."""
    started = time.monotonic()
    rows = text_units.select(["id", "document_id", "text", "start_char"]).to_pylist()
    if engine is None or getattr(engine, "kind", "offline") == "offline":
        units = []
        for i, row in enumerate(rows):
            units.append(
                extract_unit(
                    row["text"],
                    text_unit_id=row["id"],
                    document_id=row["document_id"],
                    start_char=row["start_char"] or 0,
                    entity_types=settings.entity_types,
                    window=settings.offline_cooccurrence_window,
                    claims=settings.extract_claims,
                )
            )
            if progress and (i + 1) % 100 == 0:
                progress(i + 1, len(rows))
        return ExtractionRun("offline", units, [], time.monotonic() - started)

    config = LLMExtractionConfig(
        entity_types=tuple(settings.entity_types),
        max_gleanings=settings.extraction_max_gleanings,
        extract_claims=settings.extract_claims,
        claim_description=settings.claim_description,
    )

    async def one(row: dict[str, Any]) -> tuple[UnitExtraction, ExtractionFailure | None]:
        return await extract_unit_llm(
            engine.client,
            row["text"],
            text_unit_id=row["id"],
            document_id=row["document_id"],
            start_char=row["start_char"] or 0,
            config=config,
        )

    outcomes = engine.run_batch(rows, one)
    units, failures = [], []
    for row, outcome in zip(rows, outcomes, strict=True):
        if isinstance(outcome, Exception):  # cancelled or past the deadline before it could finish
            failures.append(
                ExtractionFailure(row["id"], row["document_id"], 0, type(outcome).__name__, str(outcome))
            )
            units.append(UnitExtraction(row["id"], row["document_id"], "llm", config.version, "failed", 0))
            continue
        unit, failure = outcome
        units.append(unit)
        if failure is not None:
            failures.append(failure)
    return ExtractionRun("llm", units, failures, time.monotonic() - started)
