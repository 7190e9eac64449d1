"""Packed LLM extraction: several small text units in one request, the instructions and example sent once.

Rules, in order:
1. Packs (`plan_packs`): consecutive units, in table order, until their text reaches PACK_TOKENS or the pack
   holds MAX_PACK_UNITS; a unit as large as the budget goes alone (as it always did). PACK_TOKENS is the
   default chunk size (1,200): a pack carries as much text as one default text unit, so its reply fits the
   output limit one full unit's reply already fits (`llm_extraction_max_tokens`). A unit whose id hashes
   into one in MAX_PACK_UNITS always opens a pack (an anchor): a changed or added unit reshapes the packs
   only up to the next anchor, so an incremental re-run pays for a few packs, not every later one.
2. Each unit is labelled `u1`, `u2`, ... in the prompt; the reply's JSON object has one key per label,
   every key required by the schema sent, so each unit's records are attributed to it by its label and a
   unit with none answers with empty lists.
3. A unit the reply leaves out (or a pack whose call failed) is asked again alone with the single-unit
   prompt (`llm.extract_unit_llm`): never dropped, never stored as empty. The packed reply is cached as it
   came, so a re-run finds the same gap and the same single-unit answer in the cache.
4. Gleaning is asked only for the units whose first pass found an entity (a unit with nothing has nothing
   to add to), at most `max_gleanings` rounds; a unit leaves the rounds when one adds nothing to it. A
   round is a fresh packed request for those units listing the names already found, not the single-unit
   conversation that resends the whole first answer (which, for a pack, is most of the round's prompt).
5. Records are validated and added as the single-unit path does (`llm._add_round`), round numbers kept.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import BaseModel, Field, create_model, model_validator
from pydantic.json_schema import SkipJsonSchema

from pipeline.core.tokens import count_tokens
from pipeline.ops.extraction.llm import (
    LLMExtractionConfig,
    add_round,
    apply_endpoint_rule,
    extract_request_llm,
    prompt_values,
)
from pipeline.ops.extraction.models import ExtractionFailure, ExtractionOut, ExtractionRequest, UnitExtraction
from pipeline.prompts import EXTRACT_GRAPH, Prompt

PACK_TOKENS = 1200  # text tokens per packed request: the default chunk size (rule 1; extraction_pack_tokens)
# A reply names every unit's records (rule 2): past about a dozen units a small model starts to merge
# or skip them, and one failed reply would send that many units back alone.
MAX_PACK_UNITS = 12

EXTRACT_GRAPH_PACKED = Prompt(
    name="extract_graph_packed",
    revision=1,
    system=EXTRACT_GRAPH.system,
    user=EXTRACT_GRAPH.user.replace(
        "Text:\n{input_text}\n\n",
        "Text units (each opens with its label in brackets; extract from each unit on its own):\n"
        "{input_text}\n\n",
    ).replace(
        "Answer as JSON with all three lists (a list is empty when the text has none): "
        '{{"entities": [entity objects], "relationships": [relationship objects], "claims": [claim objects]}}',
        "Answer as one JSON object with a key for every unit label ({labels}); each key's value has all "
        'three lists, empty when that unit has none: {{"u1": {{"entities": [...], "relationships": [...], '
        '"claims": [...]}}, ...}}',
    ),
)
# A packed gleaning round is a fresh request for the units still gleaning: their texts again and only the
# names already found (a conversation repeating the first answer would resend every record).
EXTRACT_GRAPH_PACKED_GLEAN = Prompt(
    name="extract_graph_packed_glean",
    revision=1,
    system="",
    user=(
        "\n\nAlready extracted from these units (MANY entities, relationships and claims were missed): "
        "answer with only the missed ones, in the same JSON format with a key for every unit label; do not "
        "repeat these; if nothing was missed in a unit, give it empty lists.\n{found}"
    ),
)


class UnitRecords(ExtractionOut):
    """One unit's records in a packed reply; `missing` marks a unit the reply left out (rule 3)."""

    missing: SkipJsonSchema[bool] = Field(default=False)


_EMPTY = {"entities": [], "relationships": [], "claims": []}


@cache
def packed_model(labels: tuple[str, ...]) -> type[BaseModel]:
    """The reply model of a pack: one required UnitRecords per label (so a schema-following server
    answers each), a left-out one filled in as `missing` instead of failing the whole reply."""

    def _fill_missing(cls: type[BaseModel], data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            label: data[label] if isinstance(data.get(label), dict) else {**_EMPTY, "missing": True}
            for label in labels
        }

    fields: dict[str, Any] = {label: (UnitRecords, ...) for label in labels}
    return create_model(
        f"PackedExtraction{len(labels)}",
        __validators__={"fill_missing": model_validator(mode="before")(classmethod(_fill_missing))},
        **fields,
    )


def _anchor(text_unit_id: str) -> bool:
    """Whether a unit opens a pack whatever precedes it: about one unit in MAX_PACK_UNITS, by its id."""
    return hashlib.sha256(text_unit_id.encode()).digest()[0] < 256 // MAX_PACK_UNITS


def plan_packs(
    requests: Sequence[ExtractionRequest], encoding: str, budget: int = PACK_TOKENS
) -> list[list[int]]:
    """Indexes of `requests` grouped into packs by rule 1, in order; `budget` 0: one unit per pack."""
    if budget <= 0:
        return [[i] for i in range(len(requests))]
    packs: list[list[int]] = []
    tokens = 0
    for i, request in enumerate(requests):
        n = count_tokens(request.text, encoding)
        fits = tokens + n <= budget and len(packs[-1] if packs else ()) < MAX_PACK_UNITS
        if packs and fits and not _anchor(request.text_unit_id):
            packs[-1].append(i)
            tokens += n
        else:
            packs.append([i])
            tokens = n
    return packs


def packed_messages(
    requests: Sequence[ExtractionRequest], config: LLMExtractionConfig, labels: Sequence[str] | None = None
) -> list[dict[str, str]]:
    labels = list(labels) if labels is not None else [f"u{i + 1}" for i in range(len(requests))]
    text = "\n\n".join(f"[{label}]\n{r.text.strip()}" for label, r in zip(labels, requests, strict=True))
    return EXTRACT_GRAPH_PACKED.messages(**prompt_values(config), input_text=text, labels=", ".join(labels))


async def extract_pack_llm(
    client: Any, requests: Sequence[ExtractionRequest], *, max_tokens: int | None = None
) -> list[tuple[UnitExtraction, ExtractionFailure | None]]:
    """Records of each unit of a pack, by the rules in the module docstring. Never raises LLMError."""
    from pipeline.llm import LLMError

    if len(requests) == 1:
        return [await extract_request_llm(client, requests[0], max_tokens=max_tokens)]
    config = LLMExtractionConfig.from_options(requests[0].options)
    labels = tuple(f"u{i + 1}" for i in range(len(requests)))
    version = f"{EXTRACT_GRAPH_PACKED.version}+{EXTRACT_GRAPH_PACKED_GLEAN.version}+{config.version}"
    messages = packed_messages(requests, config)
    try:
        out = await client.complete_json(
            messages,
            packed_model(labels),
            task=EXTRACT_GRAPH_PACKED.name,
            prompt_version=version,
            max_tokens=max_tokens,
        )
    except LLMError:  # rule 3: the pack's units go alone
        return list(
            await asyncio.gather(*(extract_request_llm(client, r, max_tokens=max_tokens) for r in requests))
        )

    types = tuple(config.entity_types)
    results: dict[str, UnitExtraction] = {}
    seen: dict[str, set[tuple[str, ...]]] = {}
    failures: dict[str, ExtractionFailure] = {}
    for label, request in zip(labels, requests, strict=True):
        records: UnitRecords = getattr(out, label)
        if records.missing:
            continue
        unit = UnitExtraction(request.text_unit_id, request.document_id, "llm", config.version, rounds=1)
        seen[label] = set()
        add_round(unit, records, 0, request.text, request.start_char, seen[label], types)
        results[label] = unit
    # rule 4: gleaning for the units whose first pass found something
    active = [label for label in labels if label in results and results[label].entities]
    by_label = dict(zip(labels, requests, strict=True))
    for round_no in range(1, config.max_gleanings + 1):
        if not active:
            break
        found = "\n".join(
            f"[{label}] " + "; ".join(e.name for e in results[label].entities) for label in active
        )
        glean = packed_messages([by_label[label] for label in active], config, active)
        glean[-1] = {
            **glean[-1],
            "content": glean[-1]["content"] + EXTRACT_GRAPH_PACKED_GLEAN.user.format(found=found),
        }
        try:
            answer = await client.complete_json(
                glean,
                packed_model(tuple(active)),
                task=EXTRACT_GRAPH_PACKED_GLEAN.name,
                prompt_version=version,
                max_tokens=max_tokens,
            )
        except LLMError as exc:
            for label in active:
                results[label].status = "partial"
                failures[label] = ExtractionFailure(
                    results[label].text_unit_id,
                    results[label].document_id,
                    round_no,
                    type(exc).__name__,
                    str(exc),
                )
            break
        still = []
        for label in active:
            records = getattr(answer, label)
            if records.missing:
                continue
            request = by_label[label]
            added = add_round(
                results[label], records, round_no, request.text, request.start_char, seen[label], types
            )
            results[label].rounds = round_no + 1
            if added:
                still.append(label)
        active = still
    for unit in results.values():
        if not config.extract_claims:
            unit.claims = []
        apply_endpoint_rule(unit)
    alone = [i for i, label in enumerate(labels) if label not in results]
    singles = await asyncio.gather(
        *(extract_request_llm(client, requests[i], max_tokens=max_tokens) for i in alone)
    )
    single_by_label = {labels[i]: outcome for i, outcome in zip(alone, singles, strict=True)}
    return [
        single_by_label[label] if label in single_by_label else (results[label], failures.get(label))
        for label in labels
    ]
