"""A community report's citations of its context rows, written as Microsoft GraphRAG's reports write
them: `[Data: Entities (3, 7); Relationships (12, +more)]`.

- The ids are the short ids in the `id` column of the context's tables (1, 2, ... per table, in the
  order the rows are shown; see `context.render`). They are local to the community's context, never
  row numbers of the graph's tables: those change when unrelated parts of the graph change, while a
  reused report (same fingerprint, hence the same context) must still cite the right rows.
- Tables: `Reports` (sub-community reports), `Entities`, `Relationships`, `Claims`; singular names and
  any letter case are read too.
- Validation (`check_citations`): every cited id must be a row of that table in the community's
  context. Any other id (invented, copied from the prompt's example, of an unknown table, not a
  number) is removed from the text and counted in `stripped`; a reference left without ids is
  removed whole. "+more" stays after the ids that remain.
- `refs`: the cited ids resolved to what they name (an entity, relationship or claim id; a
  sub-report's community), stored with the report so that a reader can follow a citation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.ops.reports.models import CommunityReportResponse, Finding, ReportContext

TABLES = ("Reports", "Entities", "Relationships", "Claims")  # in the order a citation lists them
MAX_IDS = 5  # per table in one citation, then "+more" (as GraphRAG's prompt asks)
_ALIASES = {
    **{t.lower(): t for t in TABLES},
    "report": "Reports",
    "sub-community reports": "Reports",
    "entity": "Entities",
    "relationship": "Relationships",
    "claim": "Claims",
}
_DATA = re.compile(r"[ \t]*\[Data:([^\]]*)\]")
_REFERENCE = re.compile(r"([A-Za-z][A-Za-z -]*?)\s*\(([^)]*)\)")
_MORE = re.compile(r"^\+\s*more$", re.I)

Refs = dict[str, dict[int, str | int]]


def context_ids(context: ReportContext) -> Refs:
    """Each table's short ids in `context` and the rows they name."""
    return {
        "Reports": {i: s.community for i, s in enumerate(context.sub_reports, 1)},
        "Entities": {i: e.id for i, e in enumerate(context.entities, 1)},
        "Relationships": {i: r.id for i, r in enumerate(context.relationships, 1)},
        "Claims": {i: c.id for i, c in enumerate(context.claims, 1)},
    }


def format_citation(cited: Mapping[str, list[int]]) -> str:
    """`[Data: Entities (1, 2); Claims (4)]` for the given short ids ("" when there are none)."""
    parts = []
    for table in TABLES:
        ids = list(dict.fromkeys(cited.get(table) or []))
        if ids:
            shown = [str(i) for i in ids[:MAX_IDS]] + (["+more"] if len(ids) > MAX_IDS else [])
            parts.append(f"{table} ({', '.join(shown)})")
    return f"[Data: {'; '.join(parts)}]" if parts else ""


@dataclass
class CitationCheck:
    report: CommunityReportResponse  # with every citation resolved or removed
    cited: dict[str, list[int]] = field(default_factory=dict)  # valid short ids, per table
    stripped: int = 0  # cited ids removed because the context has no such row

    def refs(self, ids: Refs) -> dict[str, dict[str, str | int]]:
        """The cited short ids resolved to the rows they name (JSON-ready: keys are strings)."""
        return {t: {str(i): ids[t][i] for i in self.cited[t]} for t in TABLES if self.cited.get(t)}


def check_citations(report: CommunityReportResponse, context: ReportContext) -> CitationCheck:
    """The report with its citations checked against the context (module docstring)."""
    ids = context_ids(context)
    check = CitationCheck(report)
    cited: dict[str, set[int]] = {}

    def reference(m: re.Match[str]) -> str:
        parts = []
        for ref in _REFERENCE.finditer(m.group(1)):
            table = _ALIASES.get(" ".join(ref.group(1).split()).lower())
            kept, more = [], False
            for token in (t.strip() for t in ref.group(2).split(",")):
                if not token:
                    continue
                if _MORE.match(token):
                    more = True
                elif table and token.isdigit() and int(token) in ids[table]:
                    kept.append(int(token))
                else:
                    check.stripped += 1
            if table and kept:
                cited.setdefault(table, set()).update(kept)
                shown = [str(i) for i in dict.fromkeys(kept)] + (["+more"] if more else [])
                parts.append(f"{table} ({', '.join(shown)})")
        return f" [Data: {'; '.join(parts)}]" if parts else ""

    def clean(text: str) -> str:
        return _DATA.sub(reference, text).strip()

    check.report = report.model_copy(
        update={
            "title": clean(report.title),
            "summary": clean(report.summary),
            "rating_explanation": clean(report.rating_explanation),
            "findings": [
                Finding(summary=clean(f.summary), explanation=clean(f.explanation)) for f in report.findings
            ],
        }
    )
    check.cited = {t: sorted(cited[t]) for t in TABLES if t in cited}
    return check


def strip_citations(text: str) -> str:
    """The text without its `[Data: ...]` citations: a sub-report's ids name rows of its own context,
    which mean nothing in its parent's."""
    return _DATA.sub("", text)


def cited_ids(text: str) -> dict[str, list[int]]:
    """The short ids a text cites, per table (unknown tables and non-numbers left out)."""
    out: dict[str, list[int]] = {}
    for m in _DATA.finditer(text):
        for ref in _REFERENCE.finditer(m.group(1)):
            table = _ALIASES.get(" ".join(ref.group(1).split()).lower())
            numbers = [int(t) for t in (x.strip() for x in ref.group(2).split(",")) if t.isdigit()]
            if table and numbers:
                out[table] = list(dict.fromkeys([*out.get(table, []), *numbers]))
    return out
