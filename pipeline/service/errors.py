"""Errors the service answers with: one HTTP status and one stable `code` each, a message a caller can act on."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Send


class ServiceError(Exception):
    """A refusal or failure with a status, a machine-readable code and a human message (never a trace)."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, detail: Any = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.detail is not None:
            error["detail"] = self.detail
        return {"error": error}


async def send_error(send: Send, error: ServiceError, *, close: bool = False) -> None:
    """Answer `error` as its JSON body straight on the ASGI channel, for a middleware that refuses a
    request before any handler (or the framework's error handling) sees it. `close`: uvicorn closes the
    connection after this response, so a request body never read is never awaited."""
    payload = json.dumps(error.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in error.headers.items()]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"

    def __init__(self, message: str = "missing or unknown API key") -> None:
        # The header tells a client which scheme to use; it never echoes what was sent.
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(ServiceError):
    # One message for "not yours" and "does not exist", so a key cannot probe other tenants' namespaces.
    status, code = 403, "forbidden"


class InvalidRequest(ServiceError):
    status, code = 422, "invalid_request"


class IndexNotReady(ServiceError):
    status, code = 409, "index_not_ready"


class IndexDamagedError(ServiceError):
    # 503: the namespace's index exists but a table of it does not read until it is re-indexed;
    # detail names the table, the stage that writes it and the repair.
    status, code = 503, "index_damaged"


class TooManyRequests(ServiceError):
    status, code = 429, "too_many_requests"


class BodyTooLarge(ServiceError):
    status, code = 413, "body_too_large"


class DeadlineExceeded(ServiceError):
    status, code = 504, "deadline_exceeded"


class RequestTimeout(ServiceError):
    status, code = 408, "request_timeout"


def invalid_request(errors: list[dict[str, Any]], *, skip: int = 0) -> InvalidRequest:
    """A pydantic validation failure as the 422 both doors answer: `detail` holds each error's location
    (less its first `skip` parts, e.g. HTTP's "body"), message and type; never pydantic's `input` (it
    would echo the body back) nor `ctx` (it may not serialize)."""
    detail = [
        {
            "loc": [str(p) for p in e.get("loc", ())][skip:],
            "msg": str(e.get("msg")),
            "type": str(e.get("type")),
        }
        for e in errors
    ]
    message = "; ".join(f"{'.'.join(d['loc']) or 'body'}: {d['msg']}" for d in detail) or "invalid request"
    return InvalidRequest(message, detail=detail)
