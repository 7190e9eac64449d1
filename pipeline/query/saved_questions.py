"""Saved questions answered into tables, for the query-time assets.

Each function is one asset's work: global search's three stages (the batches, the map answers, the
reduced answers), and every other mode's answers (`write_answers`, one row per question as the mode's
record says), each read from and written to the namespace's store so its rows can be inspected.
A map answer is one row per batch and question (its status, attempts and error belong to the batch),
with the batch's scored points in a `points` column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa

from pipeline.core import schema, tables
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.query import registry
from pipeline.query.global_.batches import Batch
from pipeline.query.global_.search import (
    GlobalSearchConfig,
    GlobalTasks,
    MapResult,
    plan_with_reports,
    reduce_map_results,
    run_map,
)
from pipeline.query.global_.tasks import MapPoint

Log = Callable[[str], None]


@dataclass
class AnswersTable:
    table: pa.Table
    markdown: str


@dataclass(frozen=True)
class AnswerRows:
    """How one mode's answers become its table: a row's own columns (beside question, status and answer),
    the Markdown after the status, the table (name, schema), and the Markdown when there is no question."""

    row: Callable[[Any], dict[str, Any]]
    summary: Callable[[Any], str]
    table: tuple[str, pa.Schema]
    empty: str


def write_global_batches(
    store: NamespaceStore,
    questions: list[str],
    engine: Engine,
    embedder: Embedder,
    config: GlobalSearchConfig,
    write_reports: Callable[..., Any] | None = None,
) -> tuple[pa.Table, dict[str, Any]]:
    """The map batches of each question (dynamic selection rates reports through the engine; stand-ins it
    maps are written on first use by `write_reports`, as `QueryScope.write_reports`), and the selection's
    counts summed over the questions (rated, kept, mapped_reports, rate_calls, first_use_written, ...)."""
    rows, totals = [], {}
    for q in questions:
        tasks = GlobalTasks(engine, embedder)
        scope = registry.prepare(
            "global",
            q,
            settings=None,
            store=store,
            engine=engine,
            embedder=embedder,
            config=config,
            write_reports=write_reports,
        ).scope
        batches, selection, first_use = engine.run_sync(plan_with_reports(scope, q, tasks, config))
        counts = {**selection.to_dict(), "first_use_written": len(first_use.written) if first_use else 0}
        for key, value in counts.items():
            if isinstance(value, int) and not isinstance(value, bool) and key != "level":
                totals[key] = totals.get(key, 0) + value
        rows += [
            {
                "question": q,
                "batch": b.index,
                "community_ids": b.community_ids,
                "tokens": b.tokens,
                "content": b.content,
            }
            for b in batches
        ]
    table = tables.to_table(rows, schema.QUERY_GLOBAL_BATCHES_SCHEMA)
    store.write_table(schema.QUERY_GLOBAL_BATCHES, table)
    return table, totals


def write_global_map_answers(
    store: NamespaceStore, engine: Engine, embedder: Embedder, config: GlobalSearchConfig, log: Log = print
) -> pa.Table:
    """One map answer (a row with its points) per saved batch, from the batches table."""
    tasks = GlobalTasks(engine, embedder)
    by_question: dict[str, list[Batch]] = {}
    for r in store.read_table(schema.QUERY_GLOBAL_BATCHES).to_pylist():
        by_question.setdefault(r["question"], []).append(
            Batch(r["batch"], r["content"], r["community_ids"], r["tokens"])
        )
    rows = []
    for question, batches in by_question.items():
        log(f"map: {len(batches)} batches for {question!r}")
        results = engine.run_sync(run_map(tasks, question, batches, config))
        rows += [
            {
                "question": question,
                **asdict(m),
                "points": [p.model_dump() for p in m.points],
                "top_score": m.top_score,
            }
            for m in results
        ]
    table = tables.to_table(rows, schema.QUERY_GLOBAL_MAP_ANSWERS_SCHEMA)
    store.write_table(schema.QUERY_GLOBAL_MAP_ANSWERS, table)
    return table


def write_global_answers(
    store: NamespaceStore, engine: Engine, embedder: Embedder, config: GlobalSearchConfig
) -> AnswersTable:
    """The reduce step per question, from the map answers table."""
    tasks = GlobalTasks(engine, embedder)
    n_batches: dict[str, int] = {}
    for r in store.read_table(schema.QUERY_GLOBAL_BATCHES, columns=["question"]).to_pylist():
        n_batches[r["question"]] = n_batches.get(r["question"], 0) + 1
    maps: dict[str, list[MapResult]] = {q: [] for q in n_batches}
    for r in store.read_table(schema.QUERY_GLOBAL_MAP_ANSWERS).to_pylist():
        maps.setdefault(r["question"], []).append(
            MapResult(
                batch=r["batch"],
                community_ids=r["community_ids"],
                status=r["status"],
                points=[MapPoint(**p) for p in r["points"] or []],
                attempts=r["attempts"],
                error=r["error"],
                dropped_points=r["dropped_points"] or 0,
            )
        )
    return answer_all(
        store,
        engine,
        list(maps),
        lambda q: reduce_map_results(q, n_batches.get(q, 0), maps[q], tasks, config),
        AnswerRows(
            lambda res: {
                "reason": res.reason,
                "cited_communities": res.cited_communities,
                "points_used": len(res.points),
                "failed_batches": len(res.failed_batches),
                "batches": res.batches,
            },
            lambda res: f"{f' — {res.reason}' if res.reason else ''}\n\n{res.answer}",
            (schema.QUERY_GLOBAL_ANSWERS, schema.QUERY_GLOBAL_ANSWERS_SCHEMA),
            "No questions.",
        ),
    )


def answer_all(
    store: NamespaceStore,
    engine: Engine,
    questions: list[str],
    search: Callable[[str], Any],
    rows: AnswerRows,
) -> AnswersTable:
    """Each question through `search`, one row and one Markdown section per answer, written as `rows` says."""
    out, md = [], []
    for question in questions:
        res = engine.run_sync(search(question))
        out.append({"question": question, "status": res.status, "answer": res.answer, **rows.row(res)})
        md.append(f"### {question}\n\n**{res.status}**{rows.summary(res)}\n")
    name, table_schema = rows.table
    written = tables.to_table(out, table_schema)
    store.write_table(name, written)
    return AnswersTable(written, "\n".join(md) or rows.empty)


def write_answers(
    name: str,
    store: NamespaceStore,
    questions: list[str],
    *,
    settings: Any,
    engine: Engine,
    embedder: Embedder,
    given: Mapping[str, Any] | None = None,
    write_reports: Callable[..., Any] | None = None,
) -> AnswersTable:
    """Mode `name`'s saved answers: each question through `registry.run` with the options `given`
    (the run config's), one row per answer in the mode's table (`Mode.saved`). Deferred reports a
    question reads are written on first use by `write_reports`, as they are for a question asked at a
    door."""
    mode = registry.mode(name)
    saved = mode.saved
    if saved is None:
        raise ValueError(f"query mode {name!r} has no saved answers")
    parts = dict(
        settings=settings, store=store, engine=engine, embedder=embedder, write_reports=write_reports
    )
    return answer_all(
        store,
        engine,
        questions,
        lambda q: registry.run(name, q, given, **parts),
        AnswerRows(
            saved.row, saved.summary, (mode.saved_table, mode.saved_schema()), "No questions configured."
        ),
    )


def count(table: pa.Table, column: str, value: Any) -> int:
    return sum(1 for v in table.column(column).to_pylist() if v == value)
