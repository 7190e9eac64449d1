"""Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, on the OpenAI-compatible
door's paths (`pipeline.service.openai_compat`): the chat handler's own refusals (`ChatError`), and
every other layer's (the key check, the per-key limits, the body and header caps, a path that is not
there, a failure) reshaped by the `OpenAIErrors` middleware, so SDKs raise the usual exceptions and chat
front ends back off on `rate_limit_error`.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from fastapi.responses import JSONResponse
from starlette.types import Message as ASGIMessage
from starlette.types import Receive, Scope, Send

from pipeline.service.asgi import HttpMiddleware
from pipeline.service.errors import ServiceError

_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
# The service's own API under /v1/; every other /v1/ path is the OpenAI door's (its errors in OpenAI's
# shape, as an OpenAI SDK or chat front end reads them: /v1/chat/completions, /v1/models, and a
# /v1/embeddings or /v1/models/<id> that a client tries and that is not there).
NATIVE_PREFIXES = ("/v1/query/", "/v1/namespaces", "/v1/estimate/", "/v1/modes")


class ChatError(ServiceError):
    """A request the chat door refuses before any query: OpenAI's status and code for it."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.param = status, code, param


def error_type(status: int) -> str:
    """OpenAI's error `type` for an HTTP status: what an OpenAI client or chat front end reads to decide
    whether to back off (rate_limit_error), ask for a key (authentication_error) or give up."""
    return _TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")


def openai_error(exc: ServiceError) -> dict[str, Any]:
    """`exc` in OpenAI's error shape (its `detail`, when it has one, kept beside)."""
    kind = error_type(exc.status)
    error = {"message": exc.message, "type": kind, "param": getattr(exc, "param", None), "code": exc.code}
    if exc.detail is not None:
        error["detail"] = exc.detail
    return {"error": error}


def is_openai_path(path: str) -> bool:
    return path.startswith("/v1/") and not path.startswith(NATIVE_PREFIXES)


def reshaped(status: int, body: bytes) -> tuple[int, bytes]:
    """A refusal of the service's (`{"error": {"code", "message", "detail"?}}`, or any other body) as
    OpenAI's error object; 422 becomes OpenAI's 400. A body already in OpenAI's shape is kept."""
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and "type" in error:
        return status, body
    status = 400 if status == 422 else status
    if isinstance(error, dict):
        message, code, detail = (
            str(error.get("message") or ""),
            str(error.get("code") or ""),
            error.get("detail"),
        )
    else:
        message, code, detail = body.decode("utf-8", "replace").strip(), "", None
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    shaped = {"message": message or phrase, "type": error_type(status), "param": None, "code": code or None}
    if detail is not None:
        shaped["detail"] = detail
    return status, json.dumps({"error": shaped}).encode()


class OpenAIErrors(HttpMiddleware):
    """Every error answered on the OpenAI door's paths (`is_openai_path`) in OpenAI's shape, whichever
    layer answers it: the key check (401), the per-key limits (429, its Retry-After kept), the body and
    header caps (413, 431), a body that does not parse (400), a path that is not there (404) or a
    failure (5xx). The chat handler's own errors are already in that shape and pass as they are."""

    def handles(self, scope: Scope) -> bool:
        return is_openai_path(scope["path"])

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: ASGIMessage | None = None
        pieces: list[bytes] = []

        async def shaping_send(message: ASGIMessage) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and message["status"] >= 400:
                start = message  # held until the body is whole
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            pieces.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status, body = reshaped(start["status"], b"".join(pieces))
            headers = [
                (k, v)
                for k, v in start.get("headers", [])
                if k.lower() not in (b"content-length", b"content-type")
            ]
            headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
            await send({**start, "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, shaping_send)


def error_response(exc: ServiceError) -> JSONResponse:
    return JSONResponse(openai_error(exc), status_code=exc.status, headers=exc.headers)
