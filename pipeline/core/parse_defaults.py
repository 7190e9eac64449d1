"""The parse budgets' defaults: what `pipeline.parse.bounds.ParseLimits` holds when built without
settings, and the settings' own defaults (`pipeline.settings.indexing.IngestSettings`, `PIPELINE_PARSE_*`
and `PIPELINE_OCR_*`, which document them) read them from here, so each is written once and the parse
package, which a worker process imports, needs no settings model. They are sized for a 2-core, 24 GB
machine that indexes while it serves.
"""

from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, Any] = {
    # the worker process (pipeline.parse.worker)
    "memory_mb": 768,  # address space (RLIMIT_AS); the worker's RSS stays below it
    "cpu_seconds": 300.0,  # CPU time per document (RLIMIT_CPU)
    "wall_seconds": 600.0,  # wall clock per document, OCR included; then the worker is killed
    "max_output_mb": 64,  # the parsed text and layout the worker hands back
    # zip-based files (DOCX, PPTX, EPUB): bytes counted as they inflate, never the headers' sizes
    "max_expanded_mb": 500,
    "max_expansion_ratio": 100.0,  # inflated / file size, past bounds.EXPANSION_RATIO_FLOOR bytes
    # PDF pages
    "max_pages": 5000,
    "max_page_points": 14_400.0,  # larger side; 14,400 units (200 in) is PDF's own page limit
    # OCR of pages without a text layer
    "ocr_dpi": 300,
    "ocr_min_dpi": 100,  # a large page is rendered at fewer dpi to fit ocr_max_pixels, down to this
    "ocr_max_pixels": 25_000_000,  # one rendered page (a letter page at 300 dpi is 8.4 million)
    "ocr_max_pages": 200,  # per document
    "ocr_max_seconds": 300.0,  # per document, Tesseract's wall time
}


def default(field_name: str) -> Any:
    """The default of ParseLimits' field `field_name` (for the settings model, which documents it)."""
    return DEFAULTS[field_name]
