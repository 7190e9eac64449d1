"""A scripted OpenAI-compatible server on 127.0.0.1 that answers Microsoft GraphRAG's requests.

`graphrag index` and `graphrag query` need a chat model and an embedding model. This server stands in
for both, deterministically, so the interop bench runs offline:

- `/v1/embeddings`: the real all-MiniLM-L6-v2 (`pipeline.embeddings.minilm`), the model our index is
  embedded with by default, so GraphRAG's query vectors match the vectors we export (float or base64,
  as the openai client asks).
- `/v1/chat/completions`: each of GraphRAG's prompts is recognised by its text and answered in the
  form it parses: extraction tuples built from the capitalised names of the input text, "N" to the
  gleaning loop, description summaries, community reports as JSON citing their context's first rows,
  global-search map points, DRIFT's JSON, and a plain answer citing its first source otherwise.

Every request is kept (`requests`), so the bench can say which tasks ran.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
_STOP = {
    "The", "A", "An", "In", "On", "At", "He", "She", "It", "They", "We", "His", "Her", "Their", "When",
    "After", "Before", "By", "For", "From", "Of", "To", "And", "But", "Each", "Every", "There", "This",
    "That", "These", "Those", "One", "Two", "Three", "Its", "As", "With", "Then", "Now", "Later", "Once",
}  # fmt: skip
_PLACES = ("Harbour", "Bay", "Island", "Point", "Valley", "Street", "Town", "River", "Hill", "Cove")
_ORGS = ("Society", "Company", "Council", "Guild", "Institute", "Board", "Club", "Trust")


def task_of(text: str, last: str = "") -> str:
    """Which GraphRAG prompt a request's text comes from (`last`: its last message, where a gleaning
    round's question is)."""
    if "Answer Y if there are still entities" in last:
        return "extract_loop"
    if "MANY entities" in last and "were missed" in last:
        return "extract_glean"
    if "Entity specification:" in text and "Claim description:" in text:
        return "extract_claims"
    if "-Real Data-" in text and "Entity_types:" in text:
        return "extract_graph"
    if "Description List:" in text:
        return "summarize_descriptions"
    if "rating_explanation" in text and "findings" in text:
        return "community_report"
    if "follow_up_queries" in text:
        return "drift_json"
    if '"points"' in text:
        return "global_map"
    return "answer"


def _names(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for m in _NAME.finditer(text):
        words = m.group(0).split()
        while words and words[0] in _STOP:
            words = words[1:]
        if words and len(" ".join(words)) > 2:
            seen.setdefault(" ".join(words).upper(), None)
    return list(seen)


def _type(name: str) -> str:
    title = name.title()
    if any(title.endswith(p) for p in _PLACES):
        return "GEO"
    if any(o in title for o in _ORGS):
        return "ORGANIZATION"
    return "PERSON"


def extraction(text: str) -> str:
    """GraphRAG's tuples for the input text: every capitalised name, and a relationship between the
    names that share a sentence."""
    body = text.rsplit("Text:", 1)[-1].rsplit("######################", 1)[0]
    records = []
    names = _names(body)
    for name in names:
        sentence = next((s for s in re.split(r"(?<=[.!?])\s+", body) if name in s.upper()), "")
        desc = " ".join(sentence.split())[:200] or f"{name.title()} is mentioned in the text"
        records.append(f'("entity"<|>{name}<|>{_type(name)}<|>{desc})')
    pairs: dict[tuple[str, str], str] = {}
    for sentence in re.split(r"(?<=[.!?])\s+", body):
        present = [n for n in _names(sentence) if n in names]
        for a, b in zip(present, present[1:], strict=False):
            if a != b:
                pairs.setdefault((a, b), " ".join(sentence.split())[:200])
    for (a, b), sentence in pairs.items():
        records.append(f'("relationship"<|>{a}<|>{b}<|>{sentence}<|>2)')
    return "\n##\n".join(records) + "\n<|COMPLETE|>"


def claims(text: str) -> str:
    """One claim per sentence naming two entities; the object, when the sentence names one, else NONE
    and unknown dates, as GraphRAG's prompt asks."""
    body = text.rsplit("Text:", 1)[-1].rsplit("Output:", 1)[0]
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", body):
        names = _names(sentence)
        if len(names) >= 1 and len(out) < 4:
            obj = names[1] if len(names) > 1 else "NONE"
            quote = " ".join(sentence.split())
            out.append(f"({names[0]}<|>{obj}<|>ROLE<|>TRUE<|>NONE<|>NONE<|>{quote[:160]}<|>{quote})")
    return "\n##\n".join(out) + "\n<|COMPLETE|>"


def _first_ids(text: str, table: str, n: int = 2) -> list[int]:
    m = re.search(rf"-----{table}-----\s*\n[^\n]*\n((?:\d+[^\n]*\n?){{1,{n}}})", text)
    return [int(line.split(",", 1)[0]) for line in m.group(1).splitlines() if line[:1].isdigit()] if m else []


def community_report(text: str) -> str:
    real = text.rsplit("# Real Data", 1)[-1]
    entities = _first_ids(real, "Entities")
    relationships = _first_ids(real, "Relationships")
    rows = re.findall(r"^\d+,([^,\n]+),", real, flags=re.M)
    title = " and ".join(r.strip().title() for r in rows[:2]) or "A small community"
    refs = "; ".join(
        part
        for part in (
            f"Entities ({', '.join(map(str, entities))})" if entities else "",
            f"Relationships ({', '.join(map(str, relationships))})" if relationships else "",
        )
        if part
    )
    cite = f" [Data: {refs}]" if refs else ""
    report = {
        "title": title,
        "summary": f"This community centres on {title}.{cite}",
        "rating": 5.0,
        "rating_explanation": "A scripted rating.",
        "findings": [
            {"summary": f"{title} are connected", "explanation": f"The text links {title}.{cite}"},
        ],
    }
    return json.dumps(report)


def _fit_schema(body: dict[str, Any], reply: str) -> str:
    """A JSON reply cut to the properties of the request's JSON schema, when it has one (GraphRAG's
    structured calls forbid additional properties)."""
    fmt = body.get("response_format") or {}
    properties = ((fmt.get("json_schema") or {}).get("schema") or {}).get("properties")
    if not properties:
        return reply
    try:
        value = json.loads(reply)
    except json.JSONDecodeError:
        return reply
    return (
        json.dumps({k: v for k, v in value.items() if k in properties}) if isinstance(value, dict) else reply
    )


def context_tables(text: str) -> dict[str, int]:
    """The `-----Name-----` tables of a query prompt's context and their row counts."""
    out = {}
    for m in re.finditer(r"-----(\w[\w ]*)-----\s*\n([^\n]*\n)((?:[^\n-][^\n]*\n?)*)", text):
        out[m.group(1)] = len([line for line in m.group(3).splitlines() if line.strip()])
    out["nan_cells"] = len(re.findall(r"\|nan(?=\||\n)", text))  # a null read by pandas, shown as text
    return out


def chat_reply(body: dict[str, Any]) -> tuple[str, str]:
    """(task, reply text) for a chat request."""
    task, reply = _reply(body)
    return task, _fit_schema(body, reply)


def _reply(body: dict[str, Any]) -> tuple[str, str]:
    messages = body.get("messages") or []
    text = "\n".join(str(m.get("content") or "") for m in messages)
    task = task_of(text, str(messages[-1].get("content") or "") if messages else "")
    if task == "extract_loop":
        return task, "N"
    if task == "extract_glean":
        return task, "<|COMPLETE|>"
    if task == "extract_claims":
        return task, claims(text)
    if task == "extract_graph":
        return task, extraction(text)
    if task == "summarize_descriptions":
        listed = text.split("Description List:", 1)[1].split("#######", 1)[0]
        items = re.findall(r'"([^"]{3,})"', listed) or [listed.strip()]
        return task, " ".join(dict.fromkeys(i.strip() for i in items))[:600]
    if task == "community_report":
        return task, community_report(text)
    if task == "drift_json":
        return task, json.dumps(
            {
                "intermediate_answer": "A scripted intermediate answer [Data: Reports (0)].",
                "response": "A scripted follow-up answer [Data: Sources (0)].",
                "score": 60,
                "follow_up_queries": ["Who else is involved?"],
            }
        )
    if task == "global_map":
        return task, json.dumps(
            {"points": [{"description": "A scripted point [Data: Reports (0)].", "score": 70}]}
        )
    return task, "A scripted answer drawn from the context [Data: Sources (0); Reports (0)]."


class ScriptedOpenAI:
    """The server; `with ScriptedOpenAI() as s:` serves on `s.base_url` until the block ends."""

    def __init__(self, embedder: Any | None = None) -> None:
        self._embedder = embedder
        self.requests: list[tuple[str, str]] = []  # (path, task)
        self.contexts: dict[str, dict[str, int]] = {}  # task -> the context tables of its last prompt
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def tasks(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(task for _, task in self.requests))

    def embed(self, texts: list[str]) -> np.ndarray:
        if self._embedder is None:
            from pipeline.embeddings.minilm import LocalMiniLMEmbedder

            self._embedder = LocalMiniLMEmbedder()
        with self._lock:  # one model, one caller at a time
            return np.asarray(self._embedder.embed(texts), dtype=np.float32)

    def __enter__(self) -> ScriptedOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self._send({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/").endswith("/embeddings"):
                    self._embeddings(body)
                else:
                    self._chat(body)

            def _embeddings(self, body: dict[str, Any]) -> None:
                texts = body.get("input")
                texts = [texts] if isinstance(texts, str) else list(texts or [])
                vectors = server.embed([str(t) for t in texts])
                with server._lock:
                    server.requests.append((self.path, "embeddings"))
                as_b64 = body.get("encoding_format") == "base64"
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                        if as_b64
                        else v.tolist(),
                    }
                    for i, v in enumerate(vectors)
                ]
                tokens = sum(len(t.split()) for t in texts)
                self._send(
                    {
                        "object": "list",
                        "data": data,
                        "model": body.get("model", "scripted"),
                        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                    }
                )

            def _chat(self, body: dict[str, Any]) -> None:
                task, reply = chat_reply(body)
                prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
                with server._lock:
                    server.requests.append((self.path, task))
                    server.contexts[task] = context_tables(prompt)
                usage = {"prompt_tokens": 10, "completion_tokens": len(reply.split()), "total_tokens": 10}
                if body.get("stream"):
                    self._stream(body, reply, usage)
                    return
                self._send(
                    {
                        "id": f"chatcmpl-{len(server.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "scripted"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": usage,
                    }
                )

            def _stream(self, body: dict[str, Any], reply: str, usage: dict[str, int]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": body.get("model")}
                chunks = [
                    {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply}}]},
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
                ]
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        return Handler
