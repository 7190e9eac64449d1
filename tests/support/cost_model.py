"""A scripted server for cost tests: realistic token counts, every request kept, a model-like responder.

`UsageProxy` answers every chat request itself (FaultProxy with no upstream) and reports the usage a
real OpenAI server would: prompt tokens counted from the request's messages the way OpenAI's chat
models count them (`pipeline.llm.dry_run.chat_tokens`), completion tokens from the reply. It keeps each
request's task and body, so a test can compare what was sent with what an estimate said.

`ModelLikeModel` answers like a model whose graph is the one the offline rules find in the same text:
the entities, relationships and claims `pipeline.ops.extraction.offline` extracts from a text unit
(descriptions are the sentences themselves, so an entity seen in several units has several), nothing
more in gleaning rounds, a merged description made of the first words of the descriptions, and a short
report built from the first rows of the context. It is the model the estimate's stand-in graph
describes, so an estimate made before any call can be held to the calls a run then makes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from pipeline.core.tokens import count_tokens
from pipeline.llm.dry_run import chat_tokens
from pipeline.ops.extraction.models import ExtractionOptions, ExtractionRequest
from pipeline.ops.extraction.offline import extract_request
from tests.support.fault_proxy import FaultProxy
from tests.support.graph_model import answer_packed, extraction_text, is_packed_glean, packed_texts


def task_of(request: dict[str, Any]) -> str:
    """The prompt a chat request's messages come from (by its system prompt; gleaning by its length)."""
    messages = request.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    if "community of entities" in system:
        return "community_report"
    if "You merge descriptions" in system:
        return "summarize_descriptions"
    if "extract a knowledge graph" in system:
        if packed_texts(request) is not None:
            return "extract_graph_packed_glean" if is_packed_glean(request) else "extract_graph_packed"
        return "extract_graph" if extraction_text(request) is not None else "extract_graph_glean"
    return "other"


def scripted_model_env(proxy: FaultProxy) -> dict[str, str]:
    """The settings that send every model call to `proxy` as gpt-4o-mini, in JSON mode, each once, and
    give every community a model report (`report_min_entities` 0)."""
    return {
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": proxy.base_url,
        "PIPELINE_LLM_MODEL": "gpt-4o-mini",
        "PIPELINE_LLM_JSON_MODE": "json_object",
        "PIPELINE_LLM_MAX_RETRIES": "0",
        "PIPELINE_REPORT_MIN_ENTITIES": "0",
    }


class UsageProxy(FaultProxy):
    def __init__(self, responder: Any, encoding: str = "o200k_base") -> None:
        super().__init__(None, responder=responder)
        self.encoding = encoding
        self.chats: list[tuple[str, str, int, int]] = []  # (task, body digest, prompt, completion tokens)
        self._chat_lock = threading.Lock()

    def _canned(self, path: str, body: bytes) -> bytes:
        answer = json.loads(super()._canned(path, body))
        if "choices" not in answer:
            return json.dumps(answer).encode()
        request = json.loads(body)
        prompt = chat_tokens(request["messages"], self.encoding)
        completion = count_tokens(answer["choices"][0]["message"]["content"], self.encoding)
        answer["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        digest = hashlib.sha256(body).hexdigest()
        with self._chat_lock:
            self.chats.append((task_of(request), digest, prompt, completion))
        return json.dumps(answer).encode()

    def sent(self) -> list[tuple[str, str, int, int]]:
        with self._chat_lock:
            return list(self.chats)

    def calls(self) -> Counter[str]:
        return Counter(task for task, *_ in self.sent())

    def prompt_tokens(self) -> int:
        return sum(p for _, _, p, _ in self.sent())


class ModelLikeModel:
    """FaultProxy responder: see the module docstring."""

    def __init__(self, options: ExtractionOptions | None = None) -> None:
        self.options = options or ExtractionOptions()
        # Runs when a report request arrives (a fault, a cancel) and answers for it unless it returns None
        self.on_report: Callable[[dict[str, Any]], str | None] | None = None

    def __call__(self, request: dict[str, Any]) -> str:
        task = task_of(request)
        last = str(request["messages"][-1].get("content", ""))
        if task == "community_report" and self.on_report is not None:
            answer = self.on_report(request)
            if answer is not None:
                return answer
        if task.startswith("extract_graph_packed"):
            return answer_packed(request, self._extraction) or "{}"
        if task == "extract_graph":
            return json.dumps(self._extraction(extraction_text(request) or ""))
        if task == "extract_graph_glean":
            return json.dumps({"entities": [], "relationships": [], "claims": []})
        if task == "summarize_descriptions":
            words = last.split("Descriptions:\n", 1)[-1].replace("- ", " ").split()
            return json.dumps({"summary": " ".join(words[:60])})
        if task == "community_report":
            rows = [line for line in last.splitlines() if "|" in line][:6]
            words = " ".join(rows).replace("|", " ").split()
            return json.dumps(
                {
                    "title": " ".join(words[:6]) or "A community",
                    "summary": " ".join(words[:80]),
                    "findings": [
                        {"summary": " ".join(words[i : i + 8]), "explanation": " ".join(words[i : i + 40])}
                        for i in range(0, min(len(words), 120), 40)
                    ]
                    or [{"summary": "Nothing stands out", "explanation": "The community is small."}],
                    "rating": 5.0,
                    "rating_explanation": "A scripted rating.",
                }
            )
        return json.dumps({"summary": "scripted"})

    def _extraction(self, text: str) -> dict[str, Any]:
        unit = extract_request(ExtractionRequest(text, "unit", "doc", 0, self.options))
        return {
            "entities": [
                {"name": e.name, "type": e.type, "description": e.description or e.name}
                for e in unit.entities
            ],
            "relationships": [
                {
                    "source": r.source,
                    "target": r.target,
                    "description": r.description or f"{r.source} and {r.target}",
                    "strength": int(min(max(round(r.strength or 1), 1), 10)),
                }
                for r in unit.relationships
            ],
            "claims": [
                {
                    "subject": c.subject,
                    "object": c.object,
                    "claim_type": c.claim_type or "FACT",
                    "status": c.status if c.status in ("TRUE", "FALSE", "SUSPECTED") else "SUSPECTED",
                    "start_date": c.start_date,
                    "end_date": c.end_date,
                    "description": c.description or c.source_text,
                    "source_text": c.source_text,
                }
                for c in unit.claims
            ],
        }
