"""How `pipeline query vector|chunks` show a hit: the passage's place, then the piece that matched.

The matching sentence (`pipeline.query.matched_piece`) is found in the passage with its front matter
blanked, and shown with its own document offsets and the query's words marked; `--json` adds it to
each hit as `match` and keeps the passage's `text` as stored."""

from __future__ import annotations

from typing import Any

from pipeline.core.boilerplate import mask_rows
from pipeline.io.store import NamespaceStore
from pipeline.query.answer.front_matter import document_regions
from pipeline.query.answer.pages import cite_line, document_layouts, pages_label, place
from pipeline.query.matched_piece import matching_pieces


def add_matches(hits: list[dict[str, Any]], query: str, store: NamespaceStore, embedder: Any) -> None:
    """Set each hit's `match` ({text, start_char, end_char, score, marked} or None), in place."""
    passages = [
        {"text": h.get("text") or "", "document_id": h.get("document_id"), "start_char": h.get("start_char")}
        for h in hits
    ]
    if (regions := document_regions(store)) is not None:
        passages = mask_rows(passages, regions)
    layouts = document_layouts(store)
    for hit, match in zip(hits, matching_pieces(query, passages, embedder), strict=True):
        hit["match"] = match.to_dict() if match else None
        place(hit, layouts)
        if hit["match"] is not None:  # the matched sentence's own page: a passage can run over two
            located = place({"document_id": hit.get("document_id"), **hit["match"]}, layouts)
            hit["match"].update({k: located[k] for k in ("page_start", "page_end") if k in located})


def print_hits(hits: list[dict[str, Any]], score_format: str = ".3f") -> None:
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank}. score={hit['score']:{score_format}}  {cite_line(hit)}  id={str(hit['id'])[:12]}")
        match = hit.get("match")
        if match:
            page = f"{pages_label(match)} " if pages_label(match) else ""
            print(f"   {page}[{match['start_char']}:{match['end_char']}] {match['marked']}")
        else:
            print("   " + " ".join(str(hit.get("text", "")).split())[:200])
