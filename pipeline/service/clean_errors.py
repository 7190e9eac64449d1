"""An unhandled error answered as a clean 500 on a connection that stays usable.

Starlette answers an exception no handler took with a 500 and then raises it again, for the server to
log; uvicorn then closes the connection under the client, so a keep-alive client's next request on it
was reset (`Connection reset by peer`; the `openai` SDK raised APIConnectionError). This middleware,
inside the others, answers such an error itself and returns: the server sees a finished response and
keeps the connection. An error after the response started (a body cut short) still propagates: what the
client was sent of it cannot be trusted, and closing the connection is how it learns that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pipeline.service.asgi import HttpMiddleware


class CleanErrors(HttpMiddleware):
    """`respond(exc)` is the 500 an unhandled error gets (it logs the error)."""

    def __init__(self, app: ASGIApp, respond: Callable[[Exception], Response]) -> None:
        super().__init__(app)
        self.respond = respond

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            response: Any = self.respond(exc)
            await response(scope, receive, send)
