"""The OpenAI-compatible door: `GET /v1/models` and `POST /v1/chat/completions`, so that chat front ends
(Open WebUI, LibreChat, anything built on an OpenAI SDK) can ask an index.

A model is `<namespace>/<mode>`: the namespaces the key covers times the registered modes that answer a
question (the retrieval-only ones, which take a `query` and return hits, have no answer to chat with).
A completion answers the last user message through `QueryService` like `POST /v1/query/<mode>` does,
with the same keys, per-key limits, deadline and output bounds; with a model configured, earlier turns
are first condensed into a standalone question (`chat_condense`). The answer's citation blocks become
`[n]` markers, with the sources listed after the text and in a `sources` field (`chat_citations`).
`stream: true` answers OpenAI's `chat.completion.chunk` server-sent events, the answer a sentence a chunk
once the query is done: chunks only add text, and cannot take back what a retried model call withdraws
(`retract`). A client that leaves closes the query's stream, which cancels its work.

Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, whichever layer answers
them (`openai_errors`: the key check, the per-key limits, the body and header caps too), so SDKs raise
the usual exceptions and chat front ends back off on `rate_limit_error`; authentication is the
service's own (a tenant key as the SDK's API key).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pipeline.llm.batch import deadline_in, remaining, stopped
from pipeline.llm.errors import LLMError
from pipeline.query import registry
from pipeline.query.common import events as ev
from pipeline.service.auth import Principal
from pipeline.service.chat_citations import Markers, MarkerStream, sources_text, with_markers
from pipeline.service.chat_condense import CONDENSE, CondenseRequest, history_text, message_text
from pipeline.service.connections import PRINCIPAL
from pipeline.service.cors import install_cors
from pipeline.service.errors import DeadlineExceeded, ServiceError
from pipeline.service.models import MAX_QUESTION_CHARS, body_of
from pipeline.service.openai_errors import ChatError, OpenAIErrors, error_response, openai_error
from pipeline.service.queries import QueryService, llm_failure


class Message(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)  # name, tool_calls, ...: read by no mode

    role: str
    content: str | list[dict[str, Any]] | None = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    include_usage: bool = False


class ChatRequest(BaseModel):
    """OpenAI's chat request. Sampling options (temperature, top_p, max_tokens, ...) are accepted and
    ignored: the mode's own settings decide how it answers. Its fields are strict (`"stream": "yes"` is a
    400, not true), as every door's are."""

    model_config = ConfigDict(extra="allow", strict=True)

    model: str = Field(description="`<namespace>/<mode>`, as `GET /v1/models` lists them")
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None


def chat_modes() -> list[str]:
    """The registered modes a chat can ask: those that answer a question."""
    return [name for name, mode in registry.MODES.items() if mode.question == "question"]


def model_ids(principal: Principal) -> list[str]:
    return [f"{ns}/{mode}" for ns in sorted(principal.namespaces) for mode in chat_modes()]


def resolve_model(principal: Principal, model: str) -> tuple[str, str]:
    """(namespace, mode) of `model`: 404 for a mode no chat can ask, then 403 for a namespace the key
    does not cover, the same whether or not it exists."""
    namespace, _, mode = model.rpartition("/")
    if not namespace or mode not in chat_modes():
        raise ChatError(
            404,
            "model_not_found",
            f"the model {model!r} does not exist: models are '<namespace>/<mode>' with mode one of "
            f"{', '.join(chat_modes())} (GET /v1/models lists yours)",
            "model",
        )
    return principal.authorize(namespace), mode


def split_turns(messages: list[Message]) -> tuple[list[tuple[str, str]], str]:
    """(the turns before the last user message, that message's text)."""
    texts = [(m.role, message_text(m.content)) for m in messages]
    last = max((i for i, (role, _) in enumerate(texts) if role == "user"), default=None)
    if last is None or not texts[last][1].strip():
        raise ChatError(400, "invalid_request", "messages hold no user message with text", "messages")
    return texts[:last], texts[last][1]


@dataclass
class Completion:
    """One chat completion's ids and what it has cost so far."""

    model: str
    include_usage: bool = False
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def count(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)

    def usage(self) -> dict[str, int]:
        total = self.prompt_tokens + self.completion_tokens
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return sse(body)


def sse(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def standalone_question(
    service: QueryService, principal: Principal, earlier: list[tuple[str, str]], question: str,
    deadline: float, spent: Completion,
) -> str:  # fmt: skip
    """The question to ask: with a model and earlier turns, one condensing call, holding a slot of the
    key's concurrency limit as a query does; else the last message as written."""
    history = history_text(earlier)
    if not history:
        return question
    engine = service.new_engine()  # offline, the task's offline form hands the question back
    cancel = threading.Event()

    def condense() -> str:
        service.limiter.acquire(principal.key_id)  # 429 past the key's limit, as a query
        try:
            run = engine.run(CONDENSE, CondenseRequest(history, question), deadline=deadline, cancel=cancel)
            return engine.run_sync(run)
        finally:
            service.limiter.release(principal.key_id)

    try:
        standalone = await asyncio.to_thread(condense)
    except asyncio.CancelledError:  # the client left: stop the call too
        cancel.set()
        raise
    except LLMError as exc:  # as a query's own call failing would be answered
        if stopped(None, deadline):
            raise DeadlineExceeded("the chat's deadline passed while its question was condensed") from None
        raise llm_failure(exc, "chat condense") from None
    finally:
        spent.count(engine.usage.counters())
    # Cut to what a query body takes (`models.Question`).
    return standalone.strip()[:MAX_QUESTION_CHARS] or question


async def query_body(
    service: QueryService, principal: Principal, request: ChatRequest, spent: Completion
) -> Any:
    """The mode's query body for the chat's question, with what is left of the chat's deadline."""
    namespace, mode = resolve_model(principal, request.model)
    earlier, question = split_turns(request.messages)
    deadline = deadline_in(service.settings.service_timeout_s)
    question = await standalone_question(service, principal, earlier, question, deadline, spent)
    left = remaining(deadline)
    if left is not None and left <= 0:
        raise DeadlineExceeded("the chat's deadline passed while its question was condensed")
    try:
        return body_of(registry.mode(mode))(namespace=namespace, question=question, timeout_s=left)
    except ValidationError as exc:
        message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ChatError(400, "invalid_request", message, "messages") from None


def answer_of(result: dict[str, Any]) -> str:
    """The answer's text, or why there is none."""
    answer = result.get("answer")
    if isinstance(answer, str) and answer.strip():
        return answer
    return str(result.get("reason") or f"No answer ({result.get('status', 'no_results')}).")


def completion_body(done: Completion, response: dict[str, Any], question: str) -> dict[str, Any]:
    """A whole `chat.completion` from the service's query response."""
    result = response["result"]
    markers = Markers()
    text = with_markers(answer_of(result), markers)
    sources = markers.sources(ev.citations_of(result))
    text += sources_text(sources)
    done.count(result.get("usage"))
    return {
        "id": done.id,
        "object": "chat.completion",
        "created": done.created,
        "model": done.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": done.usage(),
        "sources": sources,
        "graphrag": {"status": response["status"], "truncated": response["truncated"], "question": question},
    }


async def chunks(
    spent: Completion, first: tuple[str, dict[str, Any]], stream: AsyncIterator[tuple[str, dict[str, Any]]]
) -> AsyncIterator[str]:
    """OpenAI's chunk events from the query's events; closing this closes the query's stream."""
    markers = MarkerStream()

    async def events() -> AsyncIterator[tuple[str, dict[str, Any]]]:
        yield first
        async for event in stream:
            yield event

    async with contextlib.aclosing(stream):
        yield spent.chunk({"role": "assistant", "content": ""})
        async for kind, data in events():
            # deltas and retracts stand for text that may yet be taken back: the answer comes with `done`
            if kind == ev.ERROR:
                error = ServiceError(str(data.get("message", "the query failed")), detail=data.get("detail"))
                error.status, error.code = int(data.get("status") or 500), str(data.get("code") or "error")
                yield sse(openai_error(error))
                return
            elif kind == ev.DONE:
                for piece in ev.answer_pieces(answer_of(data.get("result") or {})):
                    if text := markers.feed(piece):
                        yield spent.chunk({"content": text})
                tail = markers.finish()
                sources = markers.markers.sources(ev.citations_of(data.get("result") or {}))
                tail += sources_text(sources)
                if tail:
                    yield spent.chunk({"content": tail})
                spent.count(data.get("usage"))
                yield spent.chunk({}, "stop", sources=sources)
                if spent.include_usage:
                    yield sse({**_chunk_head(spent), "choices": [], "usage": spent.usage()})
                yield "data: [DONE]\n\n"
                return


def _chunk_head(spent: Completion) -> dict[str, Any]:
    return {"id": spent.id, "object": "chat.completion.chunk", "created": spent.created, "model": spent.model}


def install_openai(app: FastAPI, service: QueryService) -> None:
    """Mount `GET /v1/models` and `POST /v1/chat/completions` on `app` (behind its key middleware), and
    CORS for the configured origins (the doors a browser-side chat front end calls); called after the
    app's other middleware is added, so that a preflight is answered before the key check, and so that
    every error on the OpenAI door's paths, whichever layer answers it, has OpenAI's shape."""
    app.add_middleware(OpenAIErrors)
    install_cors(app, service.settings.service_cors_origins)

    @app.get("/v1/models", tags=["openai"])
    async def list_models(request: Request) -> dict[str, Any]:
        """OpenAI's model list: `<namespace>/<mode>` for each namespace of the key and each mode that
        answers a question."""
        principal: Principal = request.scope[PRINCIPAL]
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": principal.tenant}
            for m in model_ids(principal)
        ]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions", tags=["openai"])
    async def chat_completions(request: Request) -> Response:
        """OpenAI's chat completion (streamed with `stream: true`): the last user message answered in
        the model's namespace and mode, its citations as `[n]` with a `sources` list."""
        principal: Principal = request.scope[PRINCIPAL]
        try:
            chat = ChatRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            errors = exc.errors()
            message = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors)
            param = ".".join(map(str, errors[0]["loc"])) if errors and errors[0].get("loc") else None
            return error_response(ChatError(400, "invalid_request", message or "invalid request", param))
        include = bool(chat.stream_options and chat.stream_options.include_usage)
        spent = Completion(chat.model, include_usage=include)
        try:
            body = await query_body(service, principal, chat, spent)
            if not chat.stream:
                response = await service.run(principal, body)
                return JSONResponse(completion_body(spent, response, body.question))
            stream = service.stream(principal, body)
            try:
                first = await anext(stream)  # a refusal before the first event is a plain error
            except BaseException:
                await stream.aclose()
                raise
        except ServiceError as exc:
            return error_response(exc)
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(
            chunks(spent, first, stream), media_type="text/event-stream", headers=headers
        )
