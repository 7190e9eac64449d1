"""The extraction task: one text unit's entities, relationships and claims, by the rules (`offline.py`)
or by the model (`llm.py`). A unit's failure is returned with its partial records, never raised, so
one unit does not fail a run; the batch (`engine.run_batch`) enforces the deadline and cancellation,
so a unit is either finished or a failure row."""

from __future__ import annotations

from typing import Any

from pipeline.engine.task import Task, TaskContext
from pipeline.ops.extraction.llm import extract_request_llm, llm_identity
from pipeline.ops.extraction.models import ExtractionFailure, ExtractionRequest, UnitExtraction
from pipeline.ops.extraction.offline import extract_request, offline_identity

Outcome = tuple[UnitExtraction, ExtractionFailure | None]


async def _offline(request: ExtractionRequest, ctx: TaskContext) -> Outcome:
    return extract_request(request), None  # the rules cannot fail a unit


async def _model(request: ExtractionRequest, ctx: TaskContext) -> Outcome:
    return await extract_request_llm(ctx.llm, request, max_tokens=ctx.max_tokens)


def _model_identity(client: Any, options: Any) -> Any:
    return llm_identity(client.model, options)


EXTRACT: Task[ExtractionRequest, Outcome] = Task(
    "extract_unit",
    offline=_offline,
    model=_model,
    limit="extraction",
    offline_identity=offline_identity,
    model_identity=_model_identity,
)
