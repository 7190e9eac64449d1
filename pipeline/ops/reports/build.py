"""Community reports bottom-up: deepest level first, so that a parent can stand on its children's reports.

Per level: each community's fingerprint is computed (its rows plus its children's fingerprints); an
equal fingerprint in the previous `community_reports` table reuses that report with no engine call;
the others get a budgeted context (`context.py`) and go to the engine in one batch. A report the
engine could not produce (the LLM client already retried the call and repaired invalid JSON once)
becomes a `failed_reports` row instead of being skipped silently, and its parent is written from raw
rows for that child. A failed community has no stored report, so the next run asks again.

Every report's `[Data: ...]` citations are checked against its context (`citations.py`), whichever
engine wrote it: a cited id the context lacks is removed and counted (`citations_stripped`), and the
ids that remain are stored resolved to their rows (`data_refs`).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.core.report_stand_ins import DEFERRED, EXTRACTIVE
from pipeline.core.tokens import DEFAULT_ENCODING
from pipeline.engine.base import Engine, runner
from pipeline.llm.batch import CancelSignal
from pipeline.llm.errors import LLMError
from pipeline.ops.reports.citations import check_citations, context_ids
from pipeline.ops.reports.context import ChildInfo, GraphData, build_context
from pipeline.ops.reports.fingerprint import RowDigests, report_fingerprint, request_version
from pipeline.ops.reports.models import (
    CommunityReportRequest,
    CommunityReportResponse,
    ReportContext,
    SubReport,
)
from pipeline.ops.reports.offline import OFFLINE_REPORT_VERSION, offline_report
from pipeline.ops.reports.parent_context import Coverage, build_parent_context
from pipeline.ops.reports.task import REPORT
from pipeline.settings import default_of

ProgressFn = Callable[[int, int, int], None]  # (level, reports done at this level, communities at it)
_CONTENT = ("title", "summary", "full_content", "rank", "rating_explanation", "findings", "full_content_json")


@dataclass
class ReportFailure:
    community: int
    level: int
    fingerprint: str
    error_type: str
    reason: str
    raw_output: str = ""


@dataclass
class ReportsRun:
    reports: pa.Table
    failures: list[ReportFailure]
    method: str
    model: str
    generated: int = 0
    reused: int = 0
    substituted: int = 0  # reports (generated or reused) written partly from sub-community reports
    citations_stripped: int = 0  # cited ids of generated reports that named no row of their context
    per_level: dict[int, dict[str, int]] = field(default_factory=dict)
    duration_s: float = 0.0
    # community -> Coverage: what its context held, with its sub-reports' (a reused offline report: none)
    coverage: Mapping[int, Any] = field(default_factory=dict)


def _extractive_model(c: dict[str, Any], too_small: Callable[[dict[str, Any]], bool]) -> str:
    """An extractive report's `model`: DEFERRED where it stands in for a model report not written yet."""
    return EXTRACTIVE if too_small(c) else DEFERRED


def full_content(report: CommunityReportResponse) -> str:
    """GraphRAG's markdown: `# title`, the summary, then one `## ` section per finding."""
    parts = [f"# {report.title}", report.summary]
    for f in report.findings:
        parts += [f"## {f.summary}", f.explanation]
    return "\n\n".join(p.strip() for p in parts)


def _sub_report(row: dict[str, Any]) -> SubReport:
    # The model takes its fields from the report row by name (the row's other columns are ignored).
    return SubReport.model_validate({**row, "findings": row["findings"] or []})


def build_reports(
    communities: pa.Table,
    entities: pa.Table,
    relationships: pa.Table,
    covariates: pa.Table | None,
    engine: Engine,
    *,
    budget: int = 8000,
    max_words: int = default_of("report_max_words"),
    encoding: str = DEFAULT_ENCODING,
    previous: pa.Table | None = None,
    progress: ProgressFn | None = None,
    min_entities: int = 0,
    min_claims: int = 0,
    parent_budget: int | None = None,
    parents_from_children: bool | None = None,
    model_max_level: int | None = None,
    write_only: set[int] | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> ReportsRun:
    """One report per community (or a failure row), following the module docstring. `min_entities` /
    `min_claims` (0: every community): a community without children that has fewer entities and fewer
    claims gets the extractive report, `method` "extractive", with no engine call.
    `parents_from_children` (default: when a model writes the reports): a community with reported
    children reads them and only the rows they do not cover (`parent_context.py`), within
    `parent_budget` (default `budget`); else GraphRAG's substitution past the budget (`context.py`).
    `model_max_level` (reports on demand): a community deeper than this gets the extractive report
    ("deferred" in `per_level`); `pipeline index --reports eager` writes the model's later.
    `write_only` (a query's reports on first use, `on_demand.py`): only these communities may get a
    model report; the others are written as `model_max_level` would have them (so reused). `deadline` and
    `cancel` (a query's): a call they cut short is a failure like any other."""
    started = time.monotonic()
    method, model, version = engine.identity(REPORT)  # they enter every fingerprint
    if parents_from_children is None:
        parents_from_children = method != "offline"
    parent_budget = budget if parent_budget is None else parent_budget
    coverage = _Coverages()  # what each report's context held, with its children's
    graph = GraphData(entities, relationships, covariates, encoding)
    claims_of: dict[str, int] = defaultdict(int)
    if covariates is not None and "subject_entity_id" in covariates.column_names:
        for eid in covariates.column("subject_entity_id").to_pylist():
            claims_of[eid or ""] += 1

    def too_small(c: dict[str, Any]) -> bool:
        if min_entities <= 0 or c["children"]:
            return False
        members = c["entity_ids"] or []
        return len(members) < min_entities and sum(claims_of[e] for e in members) < min_claims

    def extractive(c: dict[str, Any]) -> bool:
        if write_only is not None:
            return too_small(c) or c["community"] not in write_only
        return too_small(c) or (model_max_level is not None and c["level"] > model_max_level)

    digests = RowDigests(graph)
    rows = {c["community"]: c for c in communities.to_pylist()}
    prev_rows = (
        previous.to_pylist() if previous is not None and "fingerprint" in previous.column_names else []
    )
    prev_by_fp = {r["fingerprint"]: r for r in prev_rows if r["fingerprint"]}
    prev_fp_of = {r["community"]: r["fingerprint"] for r in prev_rows}

    run = ReportsRun(tables.to_table([], schema.COMMUNITY_REPORTS_SCHEMA), [], method, f"{model} ({version})")
    fingerprint_of: dict[int, str] = {}
    community_of_fp: dict[str, int] = {}
    report_of: dict[int, dict[str, Any]] = {}
    for level in sorted({c["level"] for c in rows.values()}, reverse=True):
        at_level = sorted((c for c in rows.values() if c["level"] == level), key=lambda c: c["community"])
        stats = run.per_level.setdefault(level, defaultdict(int))
        stats["communities"] = len(at_level)
        todo = []
        for c in at_level:
            n = c["community"]
            kids = [k for k in c["children"] or [] if k in fingerprint_of]
            small = extractive(c)
            from_kids = parents_from_children and any(k in report_of for k in kids)
            prompt, fp_budget = request_version(
                version, from_children=from_kids, budget=budget, parent_budget=parent_budget
            )
            fp = report_fingerprint(
                digests.rows(c["entity_ids"] or [], c["relationship_ids"] or []),
                [(fingerprint_of[k], k in report_of) for k in kids],
                model=EXTRACTIVE if small else model,
                prompt_version=OFFLINE_REPORT_VERSION if small else prompt,
                budget=fp_budget,
                max_words=max_words,
            )
            fingerprint_of[n] = fp
            community_of_fp[fp] = n
            if fp in prev_by_fp:
                if parents_from_children:
                    # A parent written from this one's report leaves out what its context covered; only
                    # such a parent asks, so a reused report's context is built then (a re-run reusing
                    # every report builds none).
                    coverage.later(
                        n,
                        lambda c=c, kids=kids, from_kids=from_kids: _context(
                            graph, c, kids, report_of, rows, coverage, from_kids, budget, parent_budget
                        ),
                    )
                old = prev_by_fp[fp]
                # Children are stored by community number, which may have changed since: follow their
                # fingerprints to today's numbers.
                renumber = {
                    k: community_of_fp.get(prev_fp_of.get(k, ""), -1) for k in old["sub_reports"] or []
                }
                report_of[n] = {
                    **_structure(c, fp),
                    **{k: old[k] for k in (*_CONTENT, "method", "model", "context_tokens")},
                    "sub_reports": [s for s in renumber.values() if s >= 0],
                    "data_refs": _renumber_refs(old.get("data_refs"), renumber),
                }
                if small:  # the same extractive report, a stand-in now or not (the threshold may differ)
                    report_of[n]["model"] = _extractive_model(c, too_small)
                stats["reused"] += 1
                stats["substituted"] += bool(report_of[n]["sub_reports"])
                continue
            context = _context(graph, c, kids, report_of, rows, coverage, from_kids, budget, parent_budget)
            coverage.add(n, context)
            todo.append((c, fp, CommunityReportRequest(context=context, max_words=max_words), small))

        asked = [t for t in todo if not t[3]]
        outcomes = dict(
            zip(
                (t[0]["community"] for t in asked),
                engine.run_batch(
                    [t[2] for t in asked], runner(engine, REPORT), deadline=deadline, cancel=cancel
                ),
                strict=True,
            )
        )
        for c, fp, request, small in todo:
            outcome = offline_report(request.context) if small else outcomes[c["community"]]
            if isinstance(outcome, LLMError):
                run.failures.append(
                    ReportFailure(
                        c["community"],
                        level,
                        fp,
                        type(outcome).__name__,
                        str(outcome),
                        (getattr(outcome, "raw", "") or "")[:4000],
                    )
                )
                stats["failed"] += 1
                coverage.drop(c["community"])  # no report: its parent reads its rows
                continue
            ctx = request.context
            checked = check_citations(outcome, ctx)
            outcome = checked.report
            stats["citations_stripped"] += checked.stripped
            report_of[c["community"]] = {
                **_structure(c, fp),
                "title": outcome.title,
                "summary": outcome.summary,
                "full_content": full_content(outcome),
                "rank": float(outcome.rating),
                "rating_explanation": outcome.rating_explanation,
                "findings": [f.model_dump() for f in outcome.findings],
                "full_content_json": json.dumps(outcome.model_dump(), ensure_ascii=False),
                "method": EXTRACTIVE if small else method,
                # A stand-in says so: a query that needs it has the model's written (`core.report_stand_ins`)
                "model": _extractive_model(c, too_small) if small else run.model,
                "context_tokens": ctx.tokens,
                "sub_reports": [s.community for s in ctx.sub_reports],
                "data_refs": json.dumps(checked.refs(context_ids(ctx)), sort_keys=True),
            }
            stats["generated"] += 1
            stats["extractive"] += small
            stats["deferred"] += small and not too_small(c)
            stats["substituted"] += bool(ctx.sub_reports)
        if progress:
            progress(level, stats["generated"] + stats["reused"], len(at_level))

    run.per_level = {lv: dict(s) for lv, s in sorted(run.per_level.items())}
    for s in run.per_level.values():
        run.generated += s.get("generated", 0)
        run.reused += s.get("reused", 0)
        run.substituted += s.get("substituted", 0)
        run.citations_stripped += s.get("citations_stripped", 0)
    ordered = [report_of[n] for n in sorted(report_of)]
    run.reports = tables.to_table(ordered, schema.COMMUNITY_REPORTS_SCHEMA)
    run.duration_s = round(time.monotonic() - started, 3)
    run.coverage = coverage
    return run


def _context(
    graph: GraphData,
    c: dict[str, Any],
    kids: list[int],
    report_of: dict[int, dict[str, Any]],
    rows: dict[int, dict[str, Any]],
    coverage: Mapping[int, Coverage],
    from_kids: bool,
    budget: int,
    parent_budget: int,
) -> ReportContext:
    """A community's context: from its reported children (`parent_context.py`) or GraphRAG's."""
    common = {
        "community": c["community"],
        "level": c["level"],
        "member_ids": c["entity_ids"] or [],
        "relationship_ids": c["relationship_ids"] or [],
    }
    if from_kids:
        children = [
            (
                ChildInfo(_sub_report(report_of[k]), coverage[k].entities, coverage[k].relationships),
                coverage[k],
            )
            for k in kids
            if k in report_of and k in coverage
        ]
        return build_parent_context(graph, **common, children=children, budget=parent_budget)
    children = [
        ChildInfo(
            _sub_report(report_of[k]),
            set(rows[k]["entity_ids"] or []),
            set(rows[k]["relationship_ids"] or []),
        )
        for k in kids
        if k in report_of
    ]
    return build_context(graph, **common, children=children, budget=budget)


class _Coverages(Mapping[int, Coverage]):
    """community -> Coverage, a reused report's worked out on first read: building its context is most
    of a re-run's time, and only a parent written from its children's reports reads it."""

    def __init__(self) -> None:
        self._of: dict[int, Coverage | Callable[[], ReportContext]] = {}

    def add(self, community: int, context: ReportContext) -> None:
        self._of[community] = self._covered(context)

    def later(self, community: int, context: Callable[[], ReportContext]) -> None:
        self._of[community] = context

    def drop(self, community: int) -> None:
        self._of.pop(community, None)

    def __getitem__(self, community: int) -> Coverage:
        got = self._of[community]
        if not isinstance(got, Coverage):
            got = self._of[community] = self._covered(got())
        return got

    def __contains__(self, community: object) -> bool:
        return community in self._of

    def __iter__(self) -> Iterator[int]:
        return iter(self._of)

    def __len__(self) -> int:
        return len(self._of)

    def _covered(self, context: ReportContext) -> Coverage:
        out = Coverage()
        out.add_context(context)
        for s in context.sub_reports:
            if s.community in self:
                out.merge(self[s.community])
        return out


def _renumber_refs(data_refs: str | None, renumber: dict[int, int]) -> str | None:
    """A reused report's `data_refs` with its sub-reports' community numbers brought up to date."""
    if not data_refs:
        return data_refs
    refs = json.loads(data_refs)
    if "Reports" in refs:
        refs["Reports"] = {i: renumber.get(c, -1) for i, c in refs["Reports"].items()}
    return json.dumps(refs, sort_keys=True)


def _structure(c: dict[str, Any], fingerprint: str) -> dict[str, Any]:
    """The columns that come from the current communities table, reused report or not."""
    return {
        "id": c["id"],
        "human_readable_id": c["community"],
        "community": c["community"],
        "level": c["level"],
        "parent": c["parent"],
        "children": c["children"] or [],
        "period": c["period"],
        "size": c["size"],
        "fingerprint": fingerprint,
    }


def failures_table(failures: list[ReportFailure]) -> pa.Table:
    return tables.to_table([f.__dict__ for f in failures], schema.FAILED_REPORTS_SCHEMA)
