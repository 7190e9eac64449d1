"""How an answer's `[Data: Entities (3, 7); Sources (4)]` citations resolve against the context it was
given: local, DRIFT and basic search (and their offline answers) cite the same way, so one parser
serves them all."""

from __future__ import annotations

import re
from typing import Any

from pipeline.query.answer.answer_context import LABELS, SECTIONS, LocalContext, Section

_DATA = re.compile(r"\[Data:\s*([^\]]*)\]", re.IGNORECASE)
_PART = re.compile(r"([A-Za-z]+)\s*\(([^)]*)\)")
# What a model writes for a section: its label, or the label in the singular.
_SECTION_OF: dict[str, Section] = {
    **{label.lower(): section for section, label in LABELS.items()},
    "report": "reports",
    "entity": "entities",
    "relationship": "relationships",
    "claim": "claims",
    "source": "sources",
}


def resolve_citations(answer: str, context: LocalContext) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows an answer's `[Data: ...]` citations name, once each in citation order, and the citations
    that name no row of its context (as written, e.g. "Entities (99)")."""
    cited: list[dict[str, Any]] = []
    unresolved: list[str] = []
    seen: set[tuple[str, int]] = set()
    for block in _DATA.finditer(answer):
        for label, ids in _PART.findall(block.group(1)):
            section = _SECTION_OF.get(label.lower())
            for token in (t.strip() for t in ids.split(",")):
                if not token or token.lower().lstrip("+").strip() == "more":
                    continue
                row = context.row(section, int(token)) if section and token.isdigit() else None
                if row is None:
                    unresolved.append(f"{label} ({token})")
                elif (section, row.id) not in seen:
                    seen.add((section, row.id))
                    cited.append({"section": section, "id": row.id, **row.ref})
    return cited, unresolved


def describe_context(context: LocalContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The context's size for a result (budget, tokens per section, rows per section) and its rows as
    the mapping a citation resolves through: {section, id, ...what the id names}."""
    counts = {s: len(context.of(s)) for s in SECTIONS}
    summary = {
        "budget": context.budget,
        "prompt_tokens": context.prompt_tokens,
        "section_tokens": context.section_tokens,
        "section_rows": {s: n for s, n in counts.items() if n},
    }
    return summary, [{"section": r.section, "id": r.id, **r.ref} for r in context.rows]
