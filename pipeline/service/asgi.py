"""What the service's ASGI middlewares share: each handles some HTTP requests and passes the rest (other
requests, the lifespan events) through untouched."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send


class HttpMiddleware:
    """`handle` answers the HTTP requests `handles` picks (by default every one); anything else goes on to
    `app` as it came."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def handles(self, scope: Scope) -> bool:
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.handles(scope):
            await self.handle(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
