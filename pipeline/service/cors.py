"""Cross-origin requests (CORS): closed unless the operator lists origins (`service_cors_origins`).

With no setting no CORS header is ever sent, so a page of another origin cannot read an answer even
with a key it holds; the web app at `/` is same-origin and needs none. A browser-side chat front end on
another origin (Open WebUI's direct connections) works once its origin is listed. Keys travel in
headers, never cookies, so credentials are not allowed: a listed origin gains nothing a visitor's
browser holds.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from pipeline.service.auth import KEY_HEADER

# A preflight is answered this long from the browser's cache.
PREFLIGHT_MAX_AGE_S = 600


def install_cors(app: FastAPI, origins: list[str]) -> None:
    """Answer CORS for `origins` only, outside the authentication (a preflight carries no key); nothing
    at all when `origins` is empty."""
    if not origins:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=["GET", "POST"],
        allow_headers=["Authorization", KEY_HEADER, "Content-Type", "Accept"],
        allow_credentials=False,
        max_age=PREFLIGHT_MAX_AGE_S,
    )
