"""Saved lazy and auto questions answered into tables, for the `lazy_answers` and `auto_answers` assets
(the other modes' writers are in `pipeline.query.saved_questions`)."""

from __future__ import annotations

import json
from collections import Counter

from pipeline.core import schema, tables
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.lazy.search import lazy_search_async
from pipeline.query.saved_questions import AnswerRows, AnswersTable, answers_writer

write_lazy_answers = answers_writer(
    lazy_search_async,
    AnswerRows(
        lambda res: {
            "units_tested": res.units_tested,
            "units_relevant": res.units_relevant,
            "reason": res.reason,
            "model_calls": sum(res.usage[k] for k in ("expand_calls", "rate_calls", "answer_calls")),
            "tests_json": json.dumps(res.tests),
            "citations_json": json.dumps(res.citations, default=str),
        },
        lambda res: f" ({res.units_tested} units tested, {res.units_relevant} relevant)\n\n{res.answer}",
        (schema.QUERY_LAZY_ANSWERS, schema.QUERY_LAZY_ANSWERS_SCHEMA),
        "No lazy questions configured.",
    ),
)


def write_auto_answers(
    store: NamespaceStore, questions: list[str], engine: Engine, embedder: Embedder, config: AutoSearchConfig
) -> tuple[AnswersTable, dict[str, int]]:
    """The answers and how many questions took each route."""
    rows, md = [], []
    for question in questions:
        res = engine.run_sync(auto_search_async(QueryScope(store, engine, embedder), question, config))
        rows.append(
            {
                "question": question,
                "route": res.route,
                "reason": res.reason,
                "router": res.router,
                "status": res.status,
                "answer": res.answer,
                "result_json": json.dumps(res.result, default=str),
            }
        )
        md.append(f"### {question}\n\n**{res.route}** ({res.reason}) — {res.status}\n\n{res.answer}\n")
    table = tables.to_table(rows, schema.QUERY_AUTO_ANSWERS_SCHEMA)
    store.write_table(schema.QUERY_AUTO_ANSWERS, table)
    routes = Counter(r["route"] for r in rows)
    return AnswersTable(table, "\n".join(md) or "No auto questions configured."), dict(sorted(routes.items()))
