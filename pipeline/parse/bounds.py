"""The budgets a parse runs under, whatever the file declares about itself.

A hostile file is small and costs a lot: a zip whose headers lie about its size, a page tree of a
million pages, a 5,000 pt scanned page that OCR would render at 20,000 px square, XML whose entities
expand into each other. Each budget here is checked while the parse runs, against what is actually read
(bytes inflated, pages in the tree, pixels rendered, seconds spent in Tesseract), and a document that
breaks one gets an ingest_errors status naming it: `too_large_expanded`, `too_many_pages`,
`page_too_large`, `ocr_budget`, `parse_timeout`. The process-level limits (address space, CPU and
wall-clock deadline, output size) are the worker's (`pipeline.parse.worker`).

The defaults are written once, in `pipeline.core.parse_defaults`, which the settings
(`pipeline.settings.indexing.IngestSettings`, `PIPELINE_PARSE_*` and `PIPELINE_OCR_*`) read too, so the
parse package, which a worker process imports, needs no settings model. They are sized for a 2-core,
24 GB machine that indexes while it serves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

from pipeline.core.parse_defaults import DEFAULTS
from pipeline.parse.layout import ParseError


@dataclass(frozen=True)
class ParseLimits:
    memory_mb: int = DEFAULTS["memory_mb"]
    cpu_seconds: float = DEFAULTS["cpu_seconds"]
    wall_seconds: float = DEFAULTS["wall_seconds"]
    max_output_mb: int = DEFAULTS["max_output_mb"]
    max_expanded_mb: int = DEFAULTS["max_expanded_mb"]
    max_expansion_ratio: float = DEFAULTS["max_expansion_ratio"]
    max_pages: int = DEFAULTS["max_pages"]
    max_page_points: float = DEFAULTS["max_page_points"]
    ocr_dpi: int = DEFAULTS["ocr_dpi"]
    ocr_min_dpi: int = DEFAULTS["ocr_min_dpi"]
    ocr_max_pixels: int = DEFAULTS["ocr_max_pixels"]
    ocr_max_pages: int = DEFAULTS["ocr_max_pages"]
    ocr_max_seconds: float = DEFAULTS["ocr_max_seconds"]

    @classmethod
    def from_settings(cls, settings: Any) -> ParseLimits:
        """From `settings` (pipeline.settings.Settings): field `x` is setting `parse_x`, or `x` for the
        `ocr_*` ones."""
        return cls(**{f.name: getattr(settings, setting_name(f.name)) for f in fields(cls)})

    def ocr_key(self) -> str:
        """What changes the text OCR reads from a page (part of the parse cache's key)."""
        return f"dpi={self.ocr_dpi}:{self.ocr_min_dpi}:px={self.ocr_max_pixels}"


# A small file may legitimately inflate many times over (an almost empty document's styles); a ratio
# says "zip bomb" only once this much has come out.
EXPANSION_RATIO_FLOOR = 4_000_000


def setting_name(field_name: str) -> str:
    return field_name if field_name.startswith("ocr_") else f"parse_{field_name}"


@dataclass
class OcrBudget:
    """OCR spent on one document, against its limits (a run's remaining budget is folded into `pages`
    and `seconds` by the caller)."""

    pages: int
    seconds: float
    used_pages: int = 0
    used_seconds: float = 0.0
    _started: float = field(default=0.0, repr=False)

    @classmethod
    def of(cls, limits: ParseLimits) -> OcrBudget:
        return cls(limits.ocr_max_pages, limits.ocr_max_seconds)

    def left(self) -> float:
        """Seconds left; 0 when the pages or the seconds are spent."""
        if self.used_pages >= self.pages:
            return 0.0
        return max(0.0, self.seconds - self.used_seconds)

    def start(self) -> None:
        self.used_pages += 1
        self._started = time.monotonic()

    def stop(self) -> None:
        self.used_seconds += time.monotonic() - self._started

    def reason(self) -> str:
        return (
            f"the document's OCR budget is spent ({self.used_pages} pages, {self.used_seconds:.0f} s of "
            f"{self.pages} pages or {self.seconds:.0f} s: ocr_max_pages, ocr_max_seconds and the run's "
            "ocr_run_max_pages, ocr_run_max_seconds)"
        )


def page_list(numbers: list[int]) -> str:
    """'3, 5-9, 12': page numbers with their runs collapsed (a reason may name thousands)."""
    out: list[str] = []
    run: list[int] = []
    for n in sorted(numbers):
        if run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [n]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ", ".join(out)


def too_many_pages(count: int, limits: ParseLimits) -> ParseError:
    return ParseError(
        "too_many_pages",
        f"the page tree holds {count:,} pages, past the limit of {limits.max_pages:,} (parse_max_pages)",
    )
