"""`Caller`: the authenticated principal as a route parameter, for every `/v1/` route.

The check itself is `app.AuthMiddleware`'s, before any body is read; the two security schemes are
declared here only so that the OpenAPI spec shows them (its "Authorize" button)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPBearer

from pipeline.service.auth import Principal

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="or X-API-Key: <API key>")


def _principal(
    request: Request,
    _b: Annotated[Any, Depends(_bearer)],
    _k: Annotated[Any, Depends(_api_key)],
) -> Principal:
    return request.scope["graphrag.principal"]  # set by app.AuthMiddleware before any /v1/ route


Caller = Annotated[Principal, Depends(_principal)]
