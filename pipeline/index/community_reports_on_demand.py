"""Reports on first use (`PIPELINE_REPORTS=on_demand`): a query that needs a community whose model report
was deferred at index time has it written, stored and reused by every later query.

- A community is deferred when its stored report is extractive and it is not small
  (`report_min_entities`): the index wrote the extractive report in its place
  (`pipeline.ops.reports.build`, `model_max_level`).
- Its model report is built as `pipeline index --reports eager` would build it: `build_reports` over
  its subtree, where only it may get a model report, its descendants' stored reports reused by
  fingerprint (model ones and extractive ones alike). Its ancestors keep theirs: they were written
  from its extractive report, and `--reports eager` rewrites them later (their fingerprints changed).
- Concurrent first uses of one community write it once: a lock per community, and the stored table is
  read again under it; the table's read-modify-write is serialized per namespace.
- The query's deadline and report budget bound what is written; past either, the rest is `skipped`.
  A failed report is returned (the query says it is partial and names it), and nothing is stored.
- Query-time code imports neither `index` nor `ops` (tests/test_layout.py): a query reaches this
  through what the composition root hands it, never by import.
- A report is stored only whole, after the engine answered and only if the query was not cancelled
  meanwhile (`cancelled`): a cancelled query writes no half report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.engine.base import Engine
from pipeline.index.community_reports import replace_report, report_budget
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.build import EXTRACTIVE, ReportFailure, build_reports

_LOCKS: dict[tuple[str, ...], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock(*key: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


@dataclass
class OnDemandRun:
    written: list[int] = field(default_factory=list)  # model reports this call wrote
    ready: list[int] = field(default_factory=list)  # already there (another query wrote it meanwhile)
    failures: list[ReportFailure] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # past the deadline or the report budget
    cancelled: bool = False


def deferred(reports: pa.Table, communities: pa.Table, min_entities: int) -> set[int]:
    """Communities whose stored report is an extractive stand-in for a deferred model report."""
    size = dict(zip(*(communities.column(c).to_pylist() for c in ("community", "size")), strict=True))
    kids = dict(zip(*(communities.column(c).to_pylist() for c in ("community", "children")), strict=True))
    rows = reports.select(["community", "method"]).to_pylist()
    return {
        r["community"]
        for r in rows
        if r["method"] == EXTRACTIVE
        and (kids.get(r["community"]) or size.get(r["community"], 0) >= min_entities)
    }


def write_on_demand(
    store: NamespaceStore,
    settings: Any,
    engine: Engine,
    wanted: Iterable[int],
    *,
    max_reports: int | None = None,
    deadline: float | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> OnDemandRun:
    """Write the deferred model reports of `wanted` (deepest first), by the rules in the docstring.
    `deadline`: `time.monotonic()` past which no report is started."""
    out = OnDemandRun()
    if store.manifest is not None:
        # A query's view reads the last committed run's frozen files: the lock's re-read and the table's
        # read-modify-write must see what other callers wrote since, so they go to the current files.
        store = NamespaceStore(store.storage, store.namespace, store.keep_versions)
    communities = store.read_table(schema.COMMUNITIES)
    levels = dict(zip(*(communities.column(c).to_pylist() for c in ("community", "level")), strict=True))
    todo = deferred(store.read_table(schema.COMMUNITY_REPORTS), communities, settings.report_min_entities)
    order = sorted((c for c in set(wanted) if c in todo), key=lambda c: (-levels[c], c))
    key = (str(store.root), store.namespace)
    for n in order:
        if cancelled():
            out.cancelled = True
            break
        if (max_reports is not None and len(out.written) >= max_reports) or (
            deadline is not None and time.monotonic() >= deadline
        ):
            out.skipped.append(n)
            continue
        with _lock(*key, str(n)):
            reports = store.read_table(schema.COMMUNITY_REPORTS)
            if n not in deferred(reports, communities, settings.report_min_entities):
                out.ready.append(n)
                continue
            row, failure = _write_one(store, settings, engine, communities, reports, n)
            if failure is not None:
                out.failures.append(failure)
                continue
            if cancelled():  # the answer came after the query was given up: store nothing
                out.cancelled = True
                break
            with _lock(*key):
                replace_report(store, row)
            out.written.append(n)
    return out


def _write_one(
    store: NamespaceStore,
    settings: Any,
    engine: Engine,
    communities: pa.Table,
    reports: pa.Table,
    n: int,
) -> tuple[dict[str, Any] | None, ReportFailure | None]:
    rows = {c["community"]: c for c in communities.to_pylist()}
    subtree, stack = [], [n]
    while stack:
        c = stack.pop()
        subtree.append(c)
        stack.extend(rows[c]["children"] or [])
    method_of = dict(zip(*(reports.column(c).to_pylist() for c in ("community", "method")), strict=True))
    # The descendants' model reports stay model reports (so they are reused); the deferred stay extractive.
    write_only = {n} | {c for c in subtree if method_of.get(c) not in (None, EXTRACTIVE)}
    covariates = store.read_table(schema.COVARIATES) if store.has_table(schema.COVARIATES) else None
    budget = report_budget(settings)
    run = build_reports(
        tables.to_table([rows[c] for c in sorted(subtree)], communities.schema),
        store.read_table(schema.ENTITIES),
        store.read_table(schema.RELATIONSHIPS),
        covariates,
        engine,
        budget=settings.report_context_tokens,
        parent_budget=settings.report_parent_context_tokens,
        max_words=budget["max_words"],
        encoding=budget["encoding"],
        previous=reports,
        min_entities=settings.report_min_entities,
        min_claims=settings.report_min_entities,
        write_only=write_only,
    )
    failed = [f for f in run.failures if f.community == n]
    if failed:
        return None, failed[0]
    row = next(r for r in run.reports.to_pylist() if r["community"] == n)
    return row, None
