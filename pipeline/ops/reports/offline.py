"""The offline engine's community report: extractive, deterministic, written from the same context.

- Title: the most connected member entities ("Scrooge, Ghost and Christmas").
- Summary: one line on size and key entities, the largest sub-communities when their reports stand in
  for raw rows, then the most central sentences of the context: sentences from descriptions and
  sub-report summaries scored by how many central entities they name (weighted by degree), preferring
  informative lengths.
- Findings: the sub-community reports (largest first), the strongest relationships (by weight), then
  claims about the most connected entities; entity descriptions when there is nothing else.
- Citations: each finding, and the summary, cites the context rows its text comes from, as the LLM's
  reports do (`[Data: Relationships (2); Entities (1, 4)]`, short ids of `context.render`): the
  sub-report, the relationship and its two ends, the claim and its subject, or the entity.
- Rank (0-10): grows with content, saturating: 10 * s / (s + 6) with s = log2(1 + size) / 2 +
  log2(1 + evidence) + log2(1 + claims) / 4, where the evidence is the number of distinct sentences in
  the relationships' descriptions. Degree is not counted: a bin of unconnected entities, or a list of
  names in one sentence (every pair an edge), ranks low however large. It depends only on the community
  itself, so a reused report's rank stays correct.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pipeline.core.report_template import TEMPLATE_OPENINGS
from pipeline.ops.extraction.text import split_sentences
from pipeline.ops.reports.citations import format_citation, strip_citations
from pipeline.ops.reports.models import CommunityReportResponse, Finding, ReportContext

# Part of every offline report's fingerprint: bump it whenever the output below changes.
OFFLINE_REPORT_VERSION = "offline-report-v5"
SUMMARY_SENTENCES = 4
SUMMARY_MAX_WORDS = 140
EXPLANATION_MAX_WORDS = 80
MAX_FINDINGS = 10
SUB_REPORT_FINDINGS = 5
RELATIONSHIP_FINDINGS = 5
CLAIM_FINDINGS = 3
CENTRAL_ENTITIES = 10
_INFORMATIVE_WORDS = (8, 50)
_MIN_SENTENCE_WORDS = 6  # shorter ones are mostly fragments of dialogue
_MAX_SENTENCE_WORDS = 70
_NEAR_DUPLICATE_WORDS = 8  # sentences opening with the same words repeat each other


def offline_report(context: ReportContext) -> CommunityReportResponse:
    rating, explanation = _rank(context)
    return CommunityReportResponse(
        title=_title(context.top_entities),
        summary=_summary(context),
        findings=_findings(context),
        rating=rating,
        rating_explanation=explanation,
    )


def _join_names(names: Sequence[str]) -> str:
    names = [n for n in names if n]
    if len(names) <= 1:
        return names[0] if names else ""
    return ", ".join(names[:-1]) + " and " + names[-1]


def _title(top_entities: Sequence[str]) -> str:
    return _join_names(list(top_entities[:3])) or "Unnamed community"


def _words(text: str, limit: int) -> str:
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + " …"


def _sentences(text: str) -> list[str]:
    return [s.clean for s in split_sentences(text) if s.clean]


def _shorten(text: str, limit: int = EXPLANATION_MAX_WORDS) -> str:
    """Whole sentences up to `limit` words (the first one cut if it alone is longer)."""
    out: list[str] = []
    used = 0
    for sentence in _sentences(text):
        n = len(sentence.split())
        if out and used + n > limit:
            break
        out.append(sentence)
        used += n
    return _words(" ".join(out), limit) if out else _words(" ".join(text.split()), limit)


def _central_names(context: ReportContext) -> dict[str, float]:
    """Central entity names and their weights: the top members, then the best-connected context rows."""
    weights: dict[str, float] = {}
    degree = {e.title: e.degree for e in context.entities}
    for name in context.top_entities:
        weights[name] = math.log2(2 + degree.get(name, 0)) + 1.0
    for e in sorted(context.entities, key=lambda e: -e.degree)[:CENTRAL_ENTITIES]:
        weights.setdefault(e.title, math.log2(2 + e.degree))
    return {n: w for n, w in weights.items() if n.strip()}


class _Ids:
    """The short ids of the context's rows (their position in each table, from 1)."""

    def __init__(self, context: ReportContext) -> None:
        self.report = {s.community: i for i, s in enumerate(context.sub_reports, 1)}
        self.entity = {e.id: i for i, e in enumerate(context.entities, 1)}
        self.entity_by_name = {e.title: i for i, e in enumerate(context.entities, 1)}
        self.relationship = {r.id: i for i, r in enumerate(context.relationships, 1)}
        self.claim = {c.id: i for i, c in enumerate(context.claims, 1)}

    def names(self, *titles: str | None) -> list[int]:
        return [self.entity_by_name[t] for t in titles if t in self.entity_by_name]


def _summary(context: ReportContext) -> str:
    key = _join_names(context.top_entities[:3])
    lines = [f"A community of {context.size} entities around {key}." if key else ""]
    if context.sub_reports:
        parts = [f"{s.title} ({s.size})" for s in context.sub_reports[:3]]
        lines.append(f"Its largest parts: {_join_names(parts)}.")
    names = _central_names(context)
    patterns = {n: re.compile(r"(?<!\w)" + re.escape(n) + r"(?!\w)") for n in names}
    ids = _Ids(context)
    # Each text with the row it comes from: (table, short id).
    texts = [(strip_citations(s.summary), ("Reports", ids.report[s.community])) for s in context.sub_reports]
    central = sorted(context.entities, key=lambda e: -e.degree)[:CENTRAL_ENTITIES]
    texts += [(e.description, ("Entities", ids.entity[e.id])) for e in central]
    ranked_edges = sorted(context.relationships, key=lambda r: (-r.combined_degree, -r.weight, r.id))
    texts += [
        (r.description, ("Relationships", ids.relationship[r.id])) for r in ranked_edges[:CENTRAL_ENTITIES]
    ]
    scored: list[tuple[float, int, str, tuple[str, int]]] = []
    seen: set[str] = set()
    for text, source in texts:
        for sentence in _sentences(text):
            n_words = len(sentence.split())
            norm = " ".join(sentence.casefold().split()[:_NEAR_DUPLICATE_WORDS])
            if (
                norm in seen
                or not _MIN_SENTENCE_WORDS <= n_words <= _MAX_SENTENCE_WORDS
                or sentence.startswith(TEMPLATE_OPENINGS)
            ):
                continue
            seen.add(norm)
            score = sum(w for n, w in names.items() if patterns[n].search(sentence))
            if _INFORMATIVE_WORDS[0] <= n_words <= _INFORMATIVE_WORDS[1]:
                score += 0.5
            scored.append((-score, len(scored), sentence, source))
    used = sum(len(line.split()) for line in lines)
    chosen = 0
    cited: dict[str, list[int]] = {}
    for _, _, sentence, (table, row) in sorted(scored):
        n = len(sentence.split())
        if chosen >= SUMMARY_SENTENCES:
            break
        if used + n > SUMMARY_MAX_WORDS:
            continue
        lines.append(sentence)
        cited.setdefault(table, []).append(row)
        used += n
        chosen += 1
    lines.append(format_citation({t: sorted(rows) for t, rows in cited.items()}))
    return " ".join(line for line in lines if line)


def _without_template(summary: str) -> str:
    """A sub-report's summary without our own opening lines (the finding's title already says them)."""
    summary = strip_citations(summary)
    kept = [x for x in _sentences(summary) if not x.startswith(TEMPLATE_OPENINGS)]
    return " ".join(kept) or summary


def _cited(text: str, **cited: list[int]) -> str:
    return f"{text} {format_citation(cited)}".strip()


def _findings(context: ReportContext) -> list[Finding]:
    ids = _Ids(context)
    findings = [
        Finding(
            summary=s.title,
            explanation=_cited(_shorten(_without_template(s.summary)), Reports=[ids.report[s.community]]),
        )
        for s in context.sub_reports[:SUB_REPORT_FINDINGS]
    ]
    strongest = sorted(context.relationships, key=lambda r: (-r.weight, -r.combined_degree, r.id))
    for r in strongest[:RELATIONSHIP_FINDINGS]:
        if r.description.strip():
            explanation = _cited(
                _shorten(r.description),
                Entities=ids.names(r.source, r.target),
                Relationships=[ids.relationship[r.id]],
            )
            findings.append(Finding(summary=f"{r.source} and {r.target}", explanation=explanation))
    degree = {e.title: e.degree for e in context.entities}
    claims = sorted(
        context.claims, key=lambda c: (-degree.get(c.subject, 0), c.status.upper() != "TRUE", c.id)
    )
    for c in claims[:CLAIM_FINDINGS]:
        when = " to ".join(d for d in dict.fromkeys((c.start_date, c.end_date)) if d)
        status = f"Status: {c.status}" + (f", {when}" if when else "") + "."
        first = _sentences(c.description)
        headline = _words(first[0] if first else c.description, 12)
        explanation = _cited(
            f"{_shorten(c.description)} {status}",
            Entities=ids.names(c.subject, c.object),
            Claims=[ids.claim[c.id]],
        )
        findings.append(Finding(summary=f"{c.subject}: {headline}", explanation=explanation))
    if len(findings) < 2:
        for e in sorted(context.entities, key=lambda e: (-e.degree, e.title))[:3]:
            if e.description.strip():
                explanation = _cited(_shorten(e.description), Entities=[ids.entity[e.id]])
                findings.append(Finding(summary=f"{e.title} ({e.type})", explanation=explanation))
    if not findings:
        names = _join_names(context.top_entities) or "its members"
        findings.append(
            Finding(summary=f"{context.size} entities", explanation=f"The community holds {names}.")
        )
    return findings[:MAX_FINDINGS]


def _rank(context: ReportContext) -> tuple[float, str]:
    # Distinct sentences, not edge weights or degree: a list of ten names in one sentence gives every pair
    # an edge, which measures how long lists are, not how much the text says about the community.
    evidence = len({s for r in context.relationships for s in _sentences(r.description)})
    strength = (
        math.log2(1 + context.size) / 2 + math.log2(1 + evidence) + math.log2(1 + len(context.claims)) / 4
    )
    rating = round(10 * strength / (strength + 6), 2)
    top = context.top_entities[0] if context.top_entities else "none"
    return rating, (
        f"Offline rank from content: {context.size} entities, {context.total_degree} relationship ends, "
        f"{evidence} distinct sentences of relationship evidence and {len(context.claims)} claims (most "
        f"connected: {top})."
    )
