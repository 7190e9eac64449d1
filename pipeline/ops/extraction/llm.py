"""LLM extraction of one text unit: the first call, gleaning rounds, and the endpoint rule.

- Every round's output is kept, tagged with its round (GraphRAG pays for claim gleanings and then
  returns only the first round's claims).
- Gleaning is asked only of a unit whose first pass found an entity, and stops early when a round adds
  nothing new (instead of GraphRAG's extra Y/N call).
- Endpoint rule: a relationship whose source or target is not among the unit's extracted entities (any
  round) keeps its edge; the missing endpoint is added as an entity of GENERIC_TYPE with `inferred=True`
  and an empty description. Resolution then folds it into the typed entity of the same name, if any.
- A failed first call fails the unit (no records, a failure row); a failed gleaning round keeps the
  earlier rounds (status "partial") and also leaves a failure row. Completed calls are cached by the
  LLM client, so a re-run pays only for the calls that failed. A reply cut off at `max_tokens` is a
  failed call (`LLMTruncatedError`, after the client's one retry with a larger limit), never records.
- Records are validated one by one (see `models.py`): the ones that fail are dropped and counted in
  `dropped_records`; an entity of a type not requested becomes GENERIC_TYPE, counted in
  `retyped_entities`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline import prompts
from pipeline.core.names import normalize_name
from pipeline.ops.extraction.models import (
    GENERIC_TYPE,
    ExtractionFailure,
    ExtractionOptions,
    ExtractionOut,
    ExtractionRequest,
    RawClaim,
    RawEntity,
    RawRelationship,
    UnitExtraction,
    map_entity_type,
)
from pipeline.settings import default_of


@dataclass(frozen=True)
class LLMExtractionConfig:
    entity_types: Sequence[str]
    max_gleanings: int = 1
    extract_claims: bool = True
    claim_description: str = default_of("claim_description")

    @property
    def version(self) -> str:
        return f"{prompts.EXTRACT_GRAPH.version}+{prompts.EXTRACT_GRAPH_GLEAN.version}"

    @classmethod
    def from_options(cls, options: ExtractionOptions) -> LLMExtractionConfig:
        return cls(
            entity_types=tuple(options.entity_types),
            max_gleanings=options.max_gleanings,
            extract_claims=options.extract_claims,
            claim_description=options.claim_description,
        )


def prompt_values(config: LLMExtractionConfig) -> dict[str, str]:
    """What EXTRACT_GRAPH (and its packed form) fills in besides the text."""
    claim_instruction = (
        prompts.EXTRACT_GRAPH_CLAIMS.format(claim_description=config.claim_description)
        if config.extract_claims
        else prompts.EXTRACT_GRAPH_NO_CLAIMS
    )
    return {
        "entity_types": ", ".join(config.entity_types),
        "claim_instruction": claim_instruction,
        "example": prompts.extraction_example(claims=config.extract_claims),
    }


def first_messages(text: str, config: LLMExtractionConfig) -> list[dict[str, str]]:
    return prompts.EXTRACT_GRAPH.messages(**prompt_values(config), input_text=text)


async def extract_unit_llm(
    client: Any,
    text: str,
    *,
    text_unit_id: str,
    document_id: str,
    start_char: int,
    config: LLMExtractionConfig,
    max_tokens: int | None = None,
) -> tuple[UnitExtraction, ExtractionFailure | None]:
    """Records of one unit and the failure that stopped it early, if any. Never raises LLMError.
    `max_tokens` is each call's output limit (None: the client's default)."""
    from pipeline.llm import LLMError  # the LLM layer is only needed on this path

    result = UnitExtraction(text_unit_id, document_id, "llm", config.version, rounds=0)
    messages: list[dict[str, str]] = first_messages(text, config)
    seen: set[tuple[str, ...]] = set()
    failure = None
    for round_no in range(config.max_gleanings + 1):
        prompt = prompts.EXTRACT_GRAPH if round_no == 0 else prompts.EXTRACT_GRAPH_GLEAN
        if round_no > 0:
            messages = [*messages, {"role": "user", "content": prompt.user}]
        try:
            out = await client.complete_json(
                messages,
                ExtractionOut,
                task=prompt.name,
                prompt_version=config.version,
                max_tokens=max_tokens,
            )
        except LLMError as exc:
            failure = ExtractionFailure(text_unit_id, document_id, round_no, type(exc).__name__, str(exc))
            result.status = "failed" if round_no == 0 else "partial"
            break
        result.rounds = round_no + 1
        added = add_round(result, out, round_no, text, start_char, seen, tuple(config.entity_types))
        if not config.extract_claims:
            result.claims = []
        if (round_no > 0 and not added) or not result.entities:
            break  # gleaning only adds to a unit whose first pass found something
        answer = out.model_dump_json(exclude={"dropped"})
        messages = [*messages, {"role": "assistant", "content": answer}]
    apply_endpoint_rule(result)
    return result, failure


async def extract_request_llm(
    client: Any, request: ExtractionRequest, *, max_tokens: int | None = None
) -> tuple[UnitExtraction, ExtractionFailure | None]:
    """`extract_unit_llm` for an engine's extraction request."""
    return await extract_unit_llm(
        client,
        request.text,
        text_unit_id=request.text_unit_id,
        document_id=request.document_id,
        start_char=request.start_char,
        config=LLMExtractionConfig.from_options(request.options),
        max_tokens=max_tokens,
    )


def add_round(
    result: UnitExtraction,
    out: ExtractionOut,
    round_no: int,
    text: str,
    start_char: int,
    seen: set[tuple[str, ...]],
    entity_types: tuple[str, ...],
) -> int:
    """Append the round's records that earlier rounds did not already give; how many were new."""
    added = 0
    result.dropped_records += len(out.dropped)
    for e in out.entities:
        entity_type = map_entity_type(e.type, entity_types)
        key = ("e", normalize_name(e.name), entity_type or GENERIC_TYPE)
        if key[1] and key not in seen:
            seen.add(key)
            if entity_type is None:
                result.retyped_entities += 1
            result.entities.append(
                RawEntity(e.name, entity_type or GENERIC_TYPE, e.description, round=round_no)
            )
            added += 1
    for r in out.relationships:
        key = ("r", *sorted((normalize_name(r.source), normalize_name(r.target))))
        if key[1] and key[2] and key not in seen:
            seen.add(key)
            result.relationships.append(
                RawRelationship(r.source, r.target, r.description, float(r.strength), round=round_no)
            )
            added += 1
    for c in out.claims:
        key = ("c", normalize_name(c.subject), c.claim_type.upper(), c.description.strip().lower())
        if key in seen:
            continue
        seen.add(key)
        start, end = _locate(text, c.source_text, start_char)
        result.claims.append(
            RawClaim(
                subject=c.subject,
                object=c.object or None,
                claim_type=c.claim_type.strip().upper(),
                status=c.status,
                start_date=c.start_date or None,
                end_date=c.end_date or None,
                description=c.description,
                source_text=c.source_text,
                start_char=start,
                end_char=end,
                round=round_no,
            )
        )
        added += 1
    return added


def _locate(text: str, quote: str, start_char: int) -> tuple[int | None, int | None]:
    """Document offsets of a verbatim quote, or (None, None) when the model did not quote exactly."""
    quote = quote.strip()
    at = text.find(quote) if quote else -1
    if at < 0:
        return None, None
    return start_char + at, start_char + at + len(quote)


def apply_endpoint_rule(result: UnitExtraction) -> None:
    known = {normalize_name(e.name) for e in result.entities}
    for r in result.relationships:
        for name in (r.source, r.target):
            key = normalize_name(name)
            if key not in known:
                known.add(key)
                result.entities.append(
                    RawEntity(name.strip(), GENERIC_TYPE, "", round=r.round, inferred=True)
                )
