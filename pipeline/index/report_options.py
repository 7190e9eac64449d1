"""The settings' report budget, as `build_reports` takes it: the index's reports stage, a report written
on first use and the GraphRAG import must all read the same, as a report's fingerprint holds it."""

from __future__ import annotations

from typing import Any


def report_budget(settings: Any, identity: Any = None) -> dict[str, Any]:
    """The settings' report budget as `build_reports` and the GraphRAG import's `convert` take it: both
    must read the same, as a report's fingerprint holds it (else an imported report is written again).
    `identity` (the engine's `REPORT` identity): a model's reports have their own budgets, and their
    parents are written from their children's reports (`parent_budget`)."""
    if identity is not None and identity.method != "offline":
        return {
            "budget": settings.report_context_tokens,
            "parent_budget": settings.report_parent_context_tokens,
            "max_words": settings.report_max_words,
            "encoding": settings.encoding,
        }
    return {
        "budget": settings.report_max_input_tokens,
        "max_words": settings.report_max_words,
        "encoding": settings.encoding,
    }
