"""Structured output: ask for JSON in the form the server supports, dig it out of the reply, validate it.

Servers differ: OpenAI, vLLM, Ollama and LM Studio accept `{"type": "json_schema"}`; llama.cpp's Python
server answers it with HTTP 500 but constrains its output with `{"type": "json_object", "schema": ...}`;
others only know plain `json_object`. Models wrap JSON in code fences or prose whatever they are told,
so the reply is searched for the first top-level JSON value rather than parsed whole; a value nested in
a bracket that never closes (a cut-off reply) is never taken for the answer.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

JsonMode = Literal["json_schema", "json_object"]

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_decoder = json.JSONDecoder()


@functools.cache
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema (built once per model: pydantic takes about a millisecond per call)."""
    return json.loads(_schema_json(model))


def response_format(model: type[BaseModel], mode: JsonMode) -> dict[str, Any]:
    """The `response_format` request parameter for a task's output model."""
    schema = json_schema(model)
    if mode == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": model.__name__, "schema": schema}}
    # The extra "schema" key is llama.cpp's extension (grammar-constrained output); others ignore it.
    return {"type": "json_object", "schema": schema}


def schema_instruction(model: type[BaseModel]) -> str:
    """Appended to the system prompt so that models without constrained decoding know the shape too."""
    schema = json.dumps(json_schema(model), separators=(",", ":"))
    return f"Respond with a single JSON object that matches this JSON schema, and nothing else:\n{schema}"


def extract_json(text: str) -> Any:
    """The first whole top-level JSON object (else array) in `text`, fenced or in prose; ValueError if none.

    Only a value that starts outside every other bracket counts: a reply cut off mid-answer leaves its
    outer bracket open, and the complete entity inside it is a fragment, not the answer."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    first_array = None
    for candidate in candidates:
        stripped = candidate.strip()
        try:
            return json.loads(stripped)
        except ValueError:
            pass
        for value in _top_level_values(stripped):
            if isinstance(value, dict):
                return value
            # "[1]" in prose is more often a citation than the answer: keep looking for an object.
            first_array = value if first_array is None else first_array
    if first_array is not None:
        return first_array
    raise ValueError("no JSON object found in the model's reply (an unfinished one does not count)")


def _top_level_values(text: str) -> Iterator[Any]:
    """JSON values that start outside any bracket, in order; stops at a bracket that never closes."""
    at = 0
    while at < len(text):
        if text[at] not in "{[":
            at += 1
            continue
        try:
            value, end = _decoder.raw_decode(text, at)
        except ValueError:
            close = _closing(text, at)
            if close is None:
                return  # everything after is inside an unfinished value
            at = close  # a bracketed aside in prose, or broken JSON: nothing inside it is the answer
            continue
        yield value
        at = end


def _closing(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at `start` (quotes respected), or None."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def parse_reply(text: str, model: type[BaseModel]) -> BaseModel:
    """Validated task output; raises ValueError (with a message fit to show the model) otherwise."""
    value = extract_json(text)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ValueError(_compact(exc)) from exc


def _compact(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def repair_messages(messages: list[dict[str, Any]], raw: str, error: str) -> list[dict[str, Any]]:
    """The conversation for the one repair retry: the bad reply and what was wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": raw},
        {
            "role": "user",
            "content": (
                f"That reply was not valid: {error}. "
                "Answer again with only the corrected JSON object, no code fences and no other text."
            ),
        },
    ]


def with_instruction(messages: list[dict[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """The messages with the output instruction appended to the system prompt (or as one)."""
    if messages and messages[0].get("role") == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def blames_response_format(status: int, body: object) -> bool:
    """Whether an error answer says the server cannot do `json_schema` output (not a passing fault)."""
    if status == 429:
        return False
    return any(word in str(body).lower() for word in ("response_format", "json_schema"))
