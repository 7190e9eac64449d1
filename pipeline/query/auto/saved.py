"""Saved auto questions answered into a table, for the `auto_answers` asset: each answer with the route
it took and why."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pipeline.core import schema, tables
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.common.scope import QueryScope, leveled
from pipeline.query.saved_questions import AnswersTable


def write_auto_answers(
    store: NamespaceStore,
    questions: list[str],
    engine: Engine,
    embedder: Embedder,
    config: AutoSearchConfig,
    modes: Mapping[str, Any],
) -> tuple[AnswersTable, dict[str, int]]:
    """The answers and how many questions took each route among `modes` (the registry's)."""
    rows, md = [], []
    for question in questions:
        res = engine.run_sync(
            auto_search_async(
                QueryScope(store, engine, leveled(store, embedder), modes=modes), question, config
            )
        )
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
