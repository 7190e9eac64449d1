"""Page-level scores of one answer (issue 58): did a cited place land on a gold page, and how many pages
does a cited passage span.

- page recall@5: a question counts when one of the first five cited passages, or one of the first five
  quoted sentences, covers a gold page (same document, matched by title with its extension or without;
  `page_start <= page <= page_end`);
- page span: pages a cited passage covers (`page_end - page_start + 1`), for every cited passage with
  pages; the report gives their median.

The places are read from a result's JSON (`pipeline.query.answer.pages`): `citations` with pages (a
local answer's cited entities and reports have none) and `quotes`; auto's are its routed mode's.
"""

from __future__ import annotations

import re
from typing import Any

FIRST = 5


def _doc_key(name: str | None) -> str:
    return re.sub(r"\.[a-z0-9]{2,5}$", "", " ".join(str(name or "").lower().split()))


def _paged(rows: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [r for r in rows or [] if r.get("page_start") is not None]


def cited_places(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cited passages with pages, quoted sentences with pages), in the answer's order."""
    inner = result.get("result") if isinstance(result.get("result"), dict) else result  # auto
    return _paged(inner.get("citations")), _paged(inner.get("quotes"))


def _covers(place: dict[str, Any], document: str, page: int) -> bool:
    return _doc_key(place.get("document_title")) == _doc_key(document) and (
        place["page_start"] <= page <= (place.get("page_end") or place["page_start"])
    )


def page_scores(
    gold_pages: tuple[tuple[str, int], ...], result: dict[str, Any]
) -> tuple[float | None, list[int]]:
    """(1.0 or 0.0 for page recall@5, None without gold pages; the cited passages' page spans)."""
    passages, sentences = cited_places(result)
    spans = [int(p.get("page_end") or p["page_start"]) - int(p["page_start"]) + 1 for p in passages]
    if not gold_pages:
        return None, spans
    first = passages[:FIRST] + sentences[:FIRST]
    hit = any(_covers(p, doc, page) for p in first for doc, page in gold_pages)
    return (1.0 if hit else 0.0), spans
