"""Saved lazy questions answered into a table, for the `lazy_answers` asset (the other modes' writers
are in `pipeline.query.saved_questions`, auto's in `pipeline.query.auto.saved`)."""

from __future__ import annotations

import json

from pipeline.core import schema
from pipeline.query.lazy.search import lazy_search_async
from pipeline.query.saved_questions import AnswerRows, answers_writer

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
