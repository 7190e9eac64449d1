"""Entity / relationship / claim extraction over a namespace's text units.

- `models.py`: the task's request and options, the LLM's JSON, the raw records both extractors emit.
- `offline.py`: the rule-based extractor (the offline engine's); `llm.py`: the LLM extractor.
- `task.py`: the `EXTRACT` task (both forms, their identities) that the engine runs.
- `run.py`: `extract_graph(text_units, options, engine)`, every unit through `EXTRACT`.
- `table.py`: the `extracted_graph` and `failed_extractions` tables.
"""

from __future__ import annotations

from pipeline.ops.extraction.models import GENERIC_TYPE, ExtractionFailure, UnitExtraction
from pipeline.ops.extraction.offline import OFFLINE_VERSION, extract_unit
from pipeline.ops.extraction.table import failures_table, from_table, table_counts, to_table

__all__ = [
    "GENERIC_TYPE",
    "OFFLINE_VERSION",
    "ExtractionFailure",
    "UnitExtraction",
    "extract_unit",
    "failures_table",
    "from_table",
    "table_counts",
    "to_table",
]
