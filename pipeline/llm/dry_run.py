"""Dry runs of the LLM client: every call the pipeline would make goes through the real client (its prompt
building, cache key, cache lookup, repair and retry logic) and is counted here instead of being sent.

Rules:
- `CallLedger.attach(client)` swaps the client's transport for one that sends nothing and its cache for a
  read-only view of it. A call whose key the cache holds is counted as cached (free); every other call is
  counted with its exact prompt tokens, its `max_tokens` (the completion's upper bound) and an expected
  completion of `completion_fraction(task) x max_tokens` tokens.
- The reply handed back is synthetic: built from the task's JSON schema (sent as `response_format`), one
  item per list, unique strings, padded to the expected completion size. Later calls that embed it (a
  gleaning round repeats the first answer) are then counted at a realistic size, and each gleaning round
  adds something, so every allowed round is counted (an upper bound beyond the first).
- Synthetic answers go to an in-memory overlay, never to the cache; `forget` only hides a key there.
- Prompt tokens follow OpenAI's chat accounting: 4 per message (role and separators) plus its content,
  plus 3 that prime the reply; the response_format schema is not counted (servers differ).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipeline.caches.base import CachedResponse, ResponseCache
from pipeline.core.tokens import DEFAULT_ENCODING, count_tokens
from pipeline.llm.reply import Reply
from pipeline.llm.transport import Transport

# Expected completion, as a fraction of the call's max_tokens, by task (prompt name). The figures are
# what GraphRAG-style prompts typically get from gpt-4o-class models: a first extraction round fills a
# quarter of a 4,000-token limit, a gleaning round adds a tenth, a merged description is a paragraph, a
# report about a third of its limit. Any other task: DEFAULT_COMPLETION_FRACTION.
COMPLETION_FRACTION: dict[str, float] = {
    "extract_graph": 0.25,
    "extract_graph_glean": 0.1,
    "summarize_descriptions": 0.15,
    "community_report": 0.35,
    "global_map": 0.5,
    "global_reduce": 0.5,
}
DEFAULT_COMPLETION_FRACTION = 0.25
MESSAGE_OVERHEAD_TOKENS = 4
REPLY_PRIMING_TOKENS = 3
_REPAIR_OPENING = "That reply was not valid"  # pipeline.llm.structured.repair_messages


def completion_fraction(task: str) -> float:
    return COMPLETION_FRACTION.get(task, DEFAULT_COMPLETION_FRACTION)


def chat_tokens(messages: list[dict[str, Any]], encoding: str) -> int:
    """Prompt tokens of a chat request, counted as OpenAI's chat models count them."""
    content = sum(count_tokens(str(m.get("content") or ""), encoding) for m in messages)
    return content + MESSAGE_OVERHEAD_TOKENS * len(messages) + REPLY_PRIMING_TOKENS


@dataclass
class Tally:
    """One stage's calls: `calls` would be sent (paid), `cached` are answered from the cache."""

    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0  # expected
    completion_tokens_max: int = 0  # every call's max_tokens
    cached_prompt_tokens: int = 0  # what the cached calls cost when they were paid
    cached_completion_tokens: int = 0
    by_task: dict[str, int] = field(default_factory=dict)  # paid calls per task
    invalid_synthetic: int = 0  # repair requests for a synthetic reply (a bug in `synthetic_value`)

    def merge(self, other: Tally) -> None:
        for name in ("calls", "cached", "prompt_tokens", "completion_tokens", "completion_tokens_max"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cached_prompt_tokens += other.cached_prompt_tokens
        self.cached_completion_tokens += other.cached_completion_tokens
        self.invalid_synthetic += other.invalid_synthetic
        for task, n in other.by_task.items():
            self.by_task[task] = self.by_task.get(task, 0) + n


class CallLedger:
    """What a dry run would have sent, per stage (`with ledger.stage("extraction"): ...`)."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        self.encoding = encoding
        self.tallies: dict[str, Tally] = {}
        self._current = "other"
        self._lock = threading.Lock()
        self._unique = itertools.count(1)

    def stage(self, name: str) -> _Stage:
        return _Stage(self, name)

    def tally(self, name: str) -> Tally:
        with self._lock:
            return self.tallies.setdefault(name, Tally())

    def attach(self, client: Any) -> None:
        """Make `client` (an LLMClient) send nothing: calls are counted here, the cache is only read."""
        client.transport = DryRunTransport(self, model=client.model, base_url=client.base_url)
        client.cache = ReadOnlyCache(client.cache, self)
        client.json_mode = "json_schema"  # every request then carries its schema: the reply is built from it

    # ---- used by the transport and the cache -----------------------------------------------------
    def _record_hit(self, hit: CachedResponse) -> None:
        with self._lock:
            t = self.tallies.setdefault(self._current, Tally())
            t.cached += 1
            t.cached_prompt_tokens += hit.prompt_tokens
            t.cached_completion_tokens += hit.completion_tokens

    def _record_call(self, task: str, prompt: int, expected: int, limit: int, invalid: bool) -> None:
        with self._lock:
            t = self.tallies.setdefault(self._current, Tally())
            if invalid:
                t.invalid_synthetic += 1
            t.calls += 1
            t.prompt_tokens += prompt
            t.completion_tokens += expected
            t.completion_tokens_max += limit
            t.by_task[task] = t.by_task.get(task, 0) + 1

    def _next_id(self) -> int:
        with self._lock:
            return next(self._unique)


class _Stage:
    def __init__(self, ledger: CallLedger, name: str) -> None:
        self.ledger, self.name = ledger, name

    def __enter__(self) -> Tally:
        self.ledger._current = self.name
        return self.ledger.tally(self.name)

    def __exit__(self, *exc: object) -> None:
        self.ledger._current = "other"


class DryRunTransport(Transport):
    """A transport that answers every chat request with a synthetic reply and sends nothing."""

    def __init__(self, ledger: CallLedger, *, model: str, base_url: str | None) -> None:
        super().__init__(model=model, api_key="dry-run", base_url=base_url)
        self.ledger = ledger

    async def chat(
        self,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        task: str,
        *_unused: Any,  # the deadline and schema_probe mean nothing to a transport that sends nothing
        **_more: Any,
    ) -> Reply:
        limit = int(params.get("max_tokens") or 0)
        expected = int(round(completion_fraction(task) * limit))
        schema = ((params.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if schema is not None:
            text = json.dumps(synthetic_value(schema, expected, self.ledger._next_id, self.ledger.encoding))
        else:
            text = _filler(expected)
        last = str(messages[-1].get("content") or "") if messages else ""
        prompt = chat_tokens(messages, self.ledger.encoding)
        self.ledger._record_call(task, prompt, expected, limit, last.startswith(_REPAIR_OPENING))
        return Reply(text, prompt, expected, "stop")

    async def embed(self, texts: list[str], task: str, deadline: float | None) -> list[list[float]]:
        raise NotImplementedError("a dry run counts chat calls only")

    async def aclose(self) -> None:
        return None


class ReadOnlyCache:
    """The real cache for lookups; what the dry run would store stays in memory (same-run repeats hit it)."""

    def __init__(self, cache: ResponseCache | None, ledger: CallLedger) -> None:
        self.cache = cache
        self.ledger = ledger
        self._overlay: dict[str, CachedResponse | None] = {}  # None: forgotten in this dry run
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            if key in self._overlay:
                seen = self._overlay[key]
                if seen is not None:
                    self.ledger._record_hit(seen)  # a repeat within the run: the first answer is cached
                return seen
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None:
            self.ledger._record_hit(hit)
        return hit

    def put(self, key: str, response: str, **meta: Any) -> None:
        with self._lock:
            self._overlay[key] = CachedResponse(response, 0, 0)

    def forget(self, key: str) -> None:
        with self._lock:
            self._overlay[key] = None

    def count(self, task: str | None = None) -> int:
        return self.cache.count(task) if self.cache is not None else 0

    def stats(self) -> dict[str, int]:
        return self.cache.stats() if self.cache is not None else {}

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()


# ---- synthetic replies -----------------------------------------------------------------------------
_PAD_FIELDS = ("description", "summary", "explanation", "answer", "full_content")


def synthetic_value(
    schema: dict[str, Any], target_tokens: int, unique: Callable[[], int], encoding: str
) -> Any:
    """A minimal value valid against `schema` (pydantic's JSON schema), about `target_tokens` long."""
    defs = schema.get("$defs", {})
    value = _minimal(schema, defs, unique)
    padding = target_tokens - count_tokens(json.dumps(value), encoding)
    if padding > 0:
        _pad(value, _filler(padding))  # a schema without a descriptive field stays as small as it allows
    return value


def _minimal(schema: dict[str, Any], defs: dict[str, Any], unique: Callable[[], int]) -> Any:
    if "$ref" in schema:
        return _minimal(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, unique)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = schema[key]
            if key != "allOf" and any(o.get("type") == "null" for o in options):
                return None
            return _minimal(options[0], defs, unique)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0]
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: _minimal(props[name], defs, unique) for name in schema.get("required", [])}
    if kind == "array":
        if schema.get("maxItems") == 0:
            return []
        count = max(1, int(schema.get("minItems", 1)))
        return [_minimal(schema.get("items", {}), defs, unique) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + (kind == "integer"))
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    text = f"s{unique()}"
    return text + "x" * max(0, int(schema.get("minLength", 0)) - len(text))


def _pad(value: Any, filler: str) -> bool:
    """Append `filler` to the first descriptive string field found (depth first); whether one was."""
    if isinstance(value, dict):
        for name in _PAD_FIELDS:
            if isinstance(value.get(name), str):
                value[name] = f"{value[name]} {filler}"
                return True
        return any(_pad(v, filler) for v in value.values())
    if isinstance(value, list):
        return any(_pad(v, filler) for v in value)
    return False


def _filler(tokens: int) -> str:
    return " ".join(["word"] * max(0, tokens))  # " word" is one token in o200k_base and cl100k_base
