"""Reports on first use (`PIPELINE_REPORTS=on_demand`): a query that needs a community whose model report
was deferred at index time has it written, stored and reused by every later query.

- A deferred community's stored report is an extractive stand-in marked `model = DEFERRED`
  (`pipeline.core.report_stand_ins`; the index wrote it in the model report's place,
  `pipeline.ops.reports.build`, `model_max_level`).
- Its model report is built as `pipeline index --reports eager` would build it: `build_reports` over
  its subtree, where only it may get a model report, its descendants' stored reports reused by
  fingerprint (model ones and stand-ins alike). Its ancestors keep theirs: they were written from its
  stand-in, and `--reports eager` rewrites them later (their fingerprints changed).
- **Which version.** A query reads one committed index version (`NamespaceStore.pinned`); the report is
  built from that version's tables and stored into it (its frozen `community_reports` copy, replaced:
  `write_table(committed=True)`), so the query and every later one on that version read it, while a
  re-index running meanwhile is not touched. It goes into the current table too when that still holds
  the same stand-in (same community, same fingerprint: no run replaced it since), so that the next run
  and `--reports eager` reuse it instead of paying for it again. A caller reading the current files (the
  Dagster query assets) writes them, and the last committed version where it holds the same stand-in.
- Concurrent first uses of one community write it once: a lock per community and version, and the
  stored table is read again under it; each table's read-modify-write is serialized per namespace.
  (The locks are this process's: two service processes on one namespace may each write a report once.)
- The query's deadline and report budget bound what is written; past either, the rest is `skipped`
  and read as its stand-in. A failed report is returned (the query says it is partial and names it),
  and nothing is stored.
- Query-time code imports neither `index` nor `ops` (tests/test_layout.py): a query reaches this
  through what the composition root hands it (`pipeline.runtime.report_writer`), never by import.
- A report is stored only whole, after the engine answered and only if the query was not cancelled
  meanwhile: a cancelled query writes no half report. The calls themselves run under the query's deadline
  and cancel: one cut short is a failure like any other.
- Without a model (the offline engine) nothing is written: a stand-in is what the offline engine would
  write anyway.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.core.report_stand_ins import EXTRACTIVE, deferred
from pipeline.engine.base import Engine
from pipeline.index.report_options import reports_by_settings
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, is_cancelled, stopped
from pipeline.ops.reports.build import ReportFailure
from pipeline.ops.reports.task import REPORT

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


class Asking(Protocol):
    """What a question hands the writer (`pipeline.query.common.scope.QueryScope` is one): the version it
    reads, its engine (its calls are the question's), its deadline (`time.monotonic()`) and cancel."""

    store: NamespaceStore
    engine: Engine
    deadline: float | None
    cancel: CancelSignal | None


def write_on_demand(
    asking: Asking, wanted: Iterable[int], *, settings: Any, max_reports: int | None = None
) -> OnDemandRun:
    """Write the deferred model reports of `wanted` by the rules in the module docstring: level by level,
    deepest first (a parent wanted too is written from its children's new reports), each level's in one
    batch of engine calls (the client's concurrency). `max_reports`: reports this call may start. Past the
    question's deadline no report is started; once it is cancelled nothing more is stored."""
    out = OnDemandRun()
    store, engine, deadline, cancel = asking.store, asking.engine, asking.deadline, asking.cancel
    if engine is None or engine.identity(REPORT).method == "offline":
        return out
    todo = deferred(store.read_table(schema.COMMUNITY_REPORTS, columns=["community", "model"]))
    wanted = [c for c in dict.fromkeys(wanted) if c in todo]
    if not wanted:
        return out
    communities = store.read_table(schema.COMMUNITIES)
    level_of = dict(zip(*(communities.column(c).to_pylist() for c in ("community", "level")), strict=True))
    version = str(store.manifest.version) if store.manifest is not None else "current"
    key = (str(store.root), store.namespace)
    graph = _Graph(store)
    started = 0
    for level in sorted({level_of[c] for c in wanted}, reverse=True):
        why = stopped(cancel, deadline)
        if is_cancelled(cancel):
            out.cancelled = True
            break
        group = []
        for n in sorted(c for c in wanted if level_of[c] == level):
            if why is not None or (max_reports is not None and started >= max_reports):
                out.skipped.append(n)
            else:
                group.append(n)
                started += 1
        if not group:
            continue
        with contextlib.ExitStack() as held:
            for n in group:  # in one order: two callers wanting overlapping groups cannot deadlock
                held.enter_context(_lock(*key, version, str(n)))
            reports = store.read_table(schema.COMMUNITY_REPORTS)  # another caller may have stored some
            still = deferred(reports)
            out.ready += [n for n in group if n not in still]
            todo = [n for n in group if n in still]
            rows, failures = _write(graph, settings, engine, communities, reports, todo, deadline, cancel)
            out.failures += failures
            if is_cancelled(cancel):  # the answers came after the query was given up: store nothing
                out.cancelled = True
                break
            if rows:
                stand_ins = dict(
                    zip(*(reports.column(c).to_pylist() for c in ("community", "fingerprint")), strict=True)
                )
                with _lock(*key):
                    _store(store, rows, stand_ins)
                out.written += [r["community"] for r in rows]
    return out


def _store(store: NamespaceStore, rows: list[dict[str, Any]], stand_ins: dict[int, str]) -> None:
    """`rows` in place of their communities' stand-ins (`stand_ins`: community -> the stand-in's
    fingerprint), in the current table and in the committed version `store` reads (an unpinned store: the
    last committed one), each where it still holds the same stand-in (see the module docstring)."""
    current = NamespaceStore(store.storage, store.namespace, store.keep_versions)
    version = store if store.manifest is not None else current.pinned()  # else: the last committed one
    targets = [(current, False)] + ([(version, True)] if version.manifest is not None else [])
    for target, committed in targets:
        table = target.read_table(schema.COMMUNITY_REPORTS)
        held = {r["community"]: r for r in table.to_pylist()}
        # A community whose row is another now (a run replaced the table since) keeps that run's report.
        new = {
            r["community"]: r
            for r in rows
            if held.get(r["community"], {}).get("fingerprint") == stand_ins[r["community"]]
        }
        if not new:
            continue
        data = tables.to_table([new.get(c, r) for c, r in held.items()], schema.COMMUNITY_REPORTS_SCHEMA)
        target.write_table(
            schema.COMMUNITY_REPORTS,
            data.replace_schema_metadata(table.schema.metadata),  # the indexing method's stamp stays
            committed=committed,
        )


class _Graph:
    """The graph tables a call's reports are built from, read once however many levels it writes."""

    def __init__(self, store: NamespaceStore) -> None:
        self.store = store

    @functools.cached_property
    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table | None]:
        s = self.store
        covariates = s.read_table(schema.COVARIATES) if s.has_table(schema.COVARIATES) else None
        return s.read_table(schema.ENTITIES), s.read_table(schema.RELATIONSHIPS), covariates


def _write(
    graph: _Graph,
    settings: Any,
    engine: Engine,
    communities: pa.Table,
    reports: pa.Table,
    group: list[int],
    deadline: float | None,
    cancel: CancelSignal | None,
) -> tuple[list[dict[str, Any]], list[ReportFailure]]:
    """The model reports of `group` (one level's communities, so their subtrees do not overlap), built
    over their subtrees in one `build_reports` under the query's deadline and cancel; and the failures
    among them."""
    if not group:
        return [], []
    rows = {c["community"]: c for c in communities.to_pylist()}
    subtree, stack = [], list(group)
    while stack:
        c = stack.pop()
        subtree.append(c)
        stack.extend(rows[c]["children"] or [])
    method_of = dict(zip(*(reports.column(c).to_pylist() for c in ("community", "method")), strict=True))
    # The descendants' model reports stay model reports (so they are reused); the deferred stay stand-ins.
    write_only = set(group) | {c for c in subtree if method_of.get(c) not in (None, EXTRACTIVE)}
    run = reports_by_settings(  # the stage's options: so the next run and `--reports eager` reuse it
        tables.to_table([rows[c] for c in sorted(subtree)], communities.schema),
        *graph.tables,
        engine,
        settings,
        previous=reports,
        min_entities=settings.report_min_entities,
        write_only=write_only,
        deadline=deadline,
        cancel=cancel,
    )
    wanted = set(group)
    return (
        [r for r in run.reports.to_pylist() if r["community"] in wanted],
        [f for f in run.failures if f.community in wanted],
    )
