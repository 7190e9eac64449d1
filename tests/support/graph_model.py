"""A scripted "model" for FaultProxy(responder=...): valid, deterministic answers to the indexing prompts.

Extraction names every capitalised two-word phrase of the text as a person (same description wherever it
appears, so merging descriptions never needs an LLM summary) and relates consecutive names; a community
report is titled from a hash of its context. Every request is counted per task and each extraction's
text is remembered, so tests can check exactly which calls reached the "server".
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from typing import Any

NAME = re.compile(r"\b([A-Z][a-z]+ [A-Z][a-z]+)\b")


class ScriptedGraphModel:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.extracted_texts: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        messages = request["messages"]
        system = messages[0]["content"]
        last = messages[-1]["content"]
        packed = packed_texts(request)
        if packed is not None and is_packed_glean(request):
            with self._lock:
                self.calls["extract_graph_glean"] += 1
            return answer_packed(request, _extraction) or "{}"
        if packed is not None:
            with self._lock:
                self.calls["extract_graph"] += 1
                self.extracted_texts.extend(packed.values())
            return json.dumps({label: _extraction(t) for label, t in packed.items()})
        text = extraction_text(request)
        if text is not None:
            with self._lock:
                self.calls["extract_graph"] += 1
                self.extracted_texts.append(text)
            return json.dumps(_extraction(text))
        if "You merge descriptions" in system:
            with self._lock:
                self.calls["summarize_descriptions"] += 1
            return json.dumps({"summary": "Merged description."})
        if "community of entities" in system:
            digest = hashlib.sha256(last.encode()).hexdigest()[:8]
            with self._lock:
                self.calls["community_report"] += 1
            return json.dumps(
                {
                    "title": f"Community {digest}",
                    "summary": f"Summary {digest}.",
                    "findings": [{"summary": f"Finding {digest}", "explanation": "Scripted."}],
                    "rating": 5.0,
                    "rating_explanation": "Scripted.",
                }
            )
        with self._lock:
            self.calls["other"] += 1
        return json.dumps({"entities": [], "relationships": [], "claims": []})

    def total(self) -> int:
        with self._lock:
            return sum(self.calls.values())

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self.calls)


_LABEL = re.compile(r"^\[(u\d+)\]\n", re.MULTILINE)


def packed_texts(request: Any) -> dict[str, str] | None:
    """label -> text of a packed extraction request (`pipeline.ops.extraction.packed`); None otherwise."""
    try:
        messages = request["messages"]
        system, last = messages[0]["content"], messages[-1]["content"]
    except (TypeError, KeyError, IndexError):
        return None
    marker = "Text units (each opens with its label in brackets; extract from each unit on its own):\n"
    if "extract a knowledge graph" not in system or marker not in last or len(messages) != 2:
        return None
    block = last.split(marker, 1)[1].rsplit("\n\nAnswer as one JSON object", 1)[0]
    parts = _LABEL.split(block)[1:]
    return {label: text.strip() for label, text in zip(parts[::2], parts[1::2], strict=True)}


def answer_packed(request: Any, answer_unit: Any) -> str | None:
    """A packed request answered unit by unit with `answer_unit(text) -> records`; None if not packed.
    A gleaning round of a packed request is answered with empty lists for every unit it names."""
    texts = packed_texts(request)
    if texts is None:
        return None
    if is_packed_glean(request):
        return json.dumps({label: {"entities": [], "relationships": [], "claims": []} for label in texts})
    return json.dumps({label: answer_unit(text) for label, text in texts.items()})


def is_packed_glean(request: Any) -> bool:
    return "\n\nAlready extracted from these units" in str(request["messages"][-1].get("content", ""))


def extraction_text(request: Any) -> str | None:
    """The text unit an extraction request (a chat completion's JSON body) asks about; None for any
    other request. Tests use it to pick requests to hold in FaultProxy."""
    try:
        messages = request["messages"]
        system, last = messages[0]["content"], messages[-1]["content"]
    except (TypeError, KeyError, IndexError):
        return None
    if "extract a knowledge graph" in system and "Text:\n" in last:
        # the last "Text:" block: the prompt's worked example comes first with a text of its own
        return last.rsplit("Text:\n", 1)[1].rsplit("\n\nAnswer as JSON", 1)[0]
    return None


def _extraction(text: str) -> dict[str, Any]:
    names = list(dict.fromkeys(NAME.findall(text)))
    return {
        "entities": [{"name": n, "type": "person", "description": f"{n} is a person."} for n in names],
        "relationships": [
            {"source": a, "target": b, "description": f"{a} knows {b}.", "strength": 5}
            for a, b in zip(names, names[1:], strict=False)
        ],
        "claims": [],
    }
