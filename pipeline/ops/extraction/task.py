"""The extraction tasks: one text unit's entities, relationships and claims (`EXTRACT`), or a pack's
(`EXTRACT_PACK`, `packed.plan_packs`), by the rules (`offline.py`, NER batched over the pack) or by the
model (`llm.py`; `packed.py`: one request for the pack). A unit's failure is returned with its partial
records, never raised, so one unit does not fail a run; the batch (`engine.run_batch`) enforces the
deadline and cancellation, so a unit is either finished or a failure row. What each form's output is
(`ExtractorIdentity`, for the shard fingerprints) is said here too, one config JSON per form."""

from __future__ import annotations

import json
from typing import Any

from pipeline.engine.task import Task, TaskContext
from pipeline.ops.extraction.llm import LLMExtractionConfig, extract_request_llm
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    ExtractionOptions,
    ExtractionRequest,
    ExtractorIdentity,
    UnitExtraction,
)
from pipeline.ops.extraction.offline import NLP_VERSION, OFFLINE_VERSION, extract_request, extract_requests
from pipeline.ops.extraction.packed import extract_pack_llm
from pipeline.ops.extraction.processes import run_in_workers

Outcome = tuple[UnitExtraction, ExtractionFailure | None]
Pack = tuple[ExtractionRequest, ...]


async def _offline(request: ExtractionRequest, ctx: TaskContext) -> Outcome:
    return extract_request(request), None  # the rules cannot fail a unit


async def _model(request: ExtractionRequest, ctx: TaskContext) -> Outcome:
    return await extract_request_llm(ctx.llm, request, max_tokens=ctx.max_tokens)


def _identity(method: str, version: str, config: dict[str, Any], *, reusable: bool) -> ExtractorIdentity:
    return ExtractorIdentity(method, version, json.dumps(config, sort_keys=True), reusable)


def _offline_identity(options: ExtractionOptions) -> ExtractorIdentity:
    """The rules are deterministic, so a unit extracted before under the same options is reused as is."""
    version = NLP_VERSION if options.ner else OFFLINE_VERSION
    config = {
        "version": version,
        "entity_types": list(options.entity_types),
        "window": options.window,
        "claims": bool(options.extract_claims),
    }
    return _identity("offline", version, config, reusable=True)


def _model_identity(client: Any, options: ExtractionOptions) -> ExtractorIdentity:
    """Not reusable: the LLM cache answers every call made before, and a failed unit is asked again.
    The config names the model, the prompts' version and their settings: a shard part made under other
    prompts is extracted again (a mismatch costs cache lookups, never paid calls)."""
    version = LLMExtractionConfig.from_options(options).version
    config = {
        "method": "llm",
        "version": version,
        "model": client.model,
        "entity_types": list(options.entity_types),
        "max_gleanings": options.max_gleanings,
        "claims": bool(options.extract_claims),
        "claim_description": options.claim_description,
    }
    return _identity("llm", version, config, reusable=False)


EXTRACT: Task[ExtractionRequest, Outcome] = Task(
    "extract_unit",
    offline=_offline,
    model=_model,
    limit="extraction",
    offline_identity=_offline_identity,
    model_identity=_model_identity,
)


async def _offline_pack(requests: Pack, ctx: TaskContext) -> list[Outcome]:
    workers = requests[0].options.processes if requests else 1
    return [(unit, None) for unit in await run_in_workers(extract_requests, requests, workers)]


async def _model_pack(requests: Pack, ctx: TaskContext) -> list[Outcome]:
    return await extract_pack_llm(ctx.llm, requests, max_tokens=ctx.max_tokens)


# The same extraction as EXTRACT, unit by unit in order, so both share one identity.
EXTRACT_PACK: Task[Pack, list[Outcome]] = Task(
    "extract_units",
    offline=_offline_pack,
    model=_model_pack,
    limit="extraction",
    offline_identity=_offline_identity,
    model_identity=_model_identity,
)
