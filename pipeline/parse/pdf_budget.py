"""The budgets each page of a PDF is read under (`pipeline.parse.bounds`), while `pipeline.parse.pdf` reads
the document: a page larger than `max_page_points` is not read, nor is one whose OCR render would need
more than `ocr_max_pixels` even at `ocr_min_dpi` (one that fits at fewer dpi than `ocr_dpi` is rendered at
that many); OCR stops when the document's budget of pages or seconds is spent. A page a budget left
unread is a warning row naming it, and a document none of whose pages was read is refused with that
status.
"""

from __future__ import annotations

import math
import subprocess

from pipeline.parse.bounds import OcrBudget, ParseLimits
from pipeline.parse.ocr import PAGE_TIMEOUT_S, OcrPolicy, ocr_image


class PageBudgets:
    """What the budgets left unread, and which pages OCR was tried on, while a document is read."""

    def __init__(self, ocr: OcrPolicy, limits: ParseLimits, budget: OcrBudget) -> None:
        self.ocr, self.limits, self.budget = ocr, limits, budget
        self.skipped: dict[int, tuple[str, str]] = {}
        self.tried: list[int] = []

    def too_large(self, number: int, width: float, height: float) -> bool:
        limit = self.limits.max_page_points
        if max(width, height) <= limit:
            return False
        self.skipped[number] = (
            "page_too_large",
            f"{width:,.0f} x {height:,.0f} pt, larger than {limit:,.0f} pt a side (parse_max_page_points)",
        )
        return True

    def ocr_dpi(self, number: int, width: float, height: float) -> float | None:
        """The dpi to render the page at for OCR: `ocr_dpi`, or fewer where that many pixels would pass
        `ocr_max_pixels`; None (and the page skipped) when even `ocr_min_dpi` would."""
        lim = self.limits
        inches = (width / 72) * (height / 72)
        dpi = float(lim.ocr_dpi)
        if math.ceil(width * dpi / 72) * math.ceil(height * dpi / 72) > lim.ocr_max_pixels:
            # the largest scale s whose rendered bitmap, each side rounded up, holds at most
            # ocr_max_pixels: (width s + 1)(height s + 1) <= ocr_max_pixels
            area, edge = width * height, width + height
            scale = (math.sqrt(edge * edge + 4 * area * (lim.ocr_max_pixels - 1)) - edge) / (2 * area)
            dpi = scale * 72
        if dpi < lim.ocr_min_dpi:
            need = inches * lim.ocr_min_dpi**2
            self.skipped[number] = (
                "page_too_large",
                f"{width:,.0f} x {height:,.0f} pt is {need / 1e6:,.0f} million pixels at {lim.ocr_min_dpi} "
                f"dpi, the fewest OCR still reads (ocr_min_dpi), past ocr_max_pixels "
                f"({lim.ocr_max_pixels:,})",
            )
            return None
        return dpi

    def read(self, page, number: int, width: float, height: float) -> str:  # page: PdfPage
        """OCR of a page without a text layer, within the page-size and OCR budgets: the text read, ""
        when a budget left the page unread (it is then in `skipped`) or OCR read nothing."""
        dpi = self.ocr_dpi(number, width, height)
        if dpi is None:
            return ""
        left = self.budget.left()
        if left <= 0:
            self.skipped[number] = ("ocr_budget", self.budget.reason())
            return ""
        self.tried.append(number)
        self.budget.start()
        try:
            text = ocr_image(page, self.ocr, dpi, min(left, PAGE_TIMEOUT_S))
        except subprocess.TimeoutExpired:
            text = None
            if left < PAGE_TIMEOUT_S:  # the document's seconds ran out, not Tesseract's page timeout
                self.budget.stop()
                self.skipped[number] = ("ocr_budget", self.budget.reason())
                return ""
        self.budget.stop()
        return text or ""
