"""A streamed chat reply read under two clocks: time to the first token, then idle time between chunks.

A total-request timeout cuts off a slow model that is still producing tokens, and its retry queues
behind the generation the server is still running. Streaming lets the client tell "slow" from "hung":
the first-token clock covers sending the request and the server reading the prompt; once tokens flow,
each chunk restarts the idle clock. Chunks that carry no token (a role header some servers send before
reading the prompt) restart the clock they are under without ending the first-token wait.

When a clock runs out the stream is closed before `StreamStalledError` is raised: the server sees the
client go and stops generating, so a retry never queues behind the abandoned generation. A server that
answers a streamed request with one JSON body (it does not stream) is read as that whole reply.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from pipeline.llm.reply import _OPEN, Reply, build_reply, reasoning_of, split_reasoning


class StreamStalledError(TimeoutError):
    """No token within the first-token clock, or no chunk within the idle clock; the stream is closed.

    `clock` is "first_token" or "idle", `seconds` its length."""

    def __init__(self, clock: str, seconds: float) -> None:
        what = "no first token" if clock == "first_token" else "no token"
        super().__init__(f"{what} for {seconds:g}s")
        self.clock = clock
        self.seconds = seconds


class StreamIncompleteError(ValueError):
    """The stream ended without saying how the reply finished (a dropped connection, a cut body)."""


class Written:
    """Forwards a reply's answer text to `on_text` as it streams, each character once: the reasoning
    before it (`<think>…</think>`) is held back, and an attempt that is retried (a stalled stream, a
    reply cut off at max_tokens) forwards only what goes beyond what an earlier attempt already did.

    A retry that writes otherwise than what was forwarded withdraws the difference first:
    `on_withdraw(n)` takes back the last n characters forwarded, so that what was forwarded, less what
    was withdrawn, is always the start of the call's answer (`settle`: all of it; `abandon`: none, the
    call failed). Without `on_withdraw` such a retry forwards nothing more."""

    def __init__(
        self, on_text: Callable[[str], None], on_withdraw: Callable[[int], None] | None = None
    ) -> None:
        self.on_text = on_text
        self.on_withdraw = on_withdraw
        self.sent = ""
        self.content = ""

    def start(self) -> None:
        """A new attempt: its text is compared with what was forwarded from its start."""
        self.content = ""

    def add(self, piece: str) -> None:
        self.content += piece
        head = self.content.lstrip()[: len(_OPEN)]
        if _OPEN.startswith(head) and len(head) < len(_OPEN):  # maybe the start of a think tag: wait
            return
        answer, _ = split_reasoning(self.content)  # "" while a think block is open
        if self.sent.startswith(answer):  # nothing beyond what an earlier attempt forwarded yet
            return
        self._forward(answer)

    def whole(self, text: str) -> None:
        """A reply that came whole (the cache, a server that does not stream)."""
        self.start()
        self.add(text)

    def settle(self, answer: str) -> None:
        """The call's answer: what was forwarded is made its start, and the rest forwarded."""
        if answer != self.sent:
            self._forward(answer)

    def abandon(self) -> None:
        """The call failed: what it forwarded is no answer's."""
        self._withdraw(len(self.sent))

    def _forward(self, answer: str) -> None:
        common = len(os.path.commonprefix([answer, self.sent]))
        if common < len(self.sent):
            if self.on_withdraw is None:
                return
            self._withdraw(len(self.sent) - common)
        if len(answer) > len(self.sent):
            new, self.sent = answer[len(self.sent) :], answer
            self.on_text(new)

    def _withdraw(self, n: int) -> None:
        if n > 0 and self.on_withdraw is not None:
            self.sent = self.sent[: len(self.sent) - n]
            self.on_withdraw(n)


def _is_event_stream(response: Any) -> bool:
    return "text/event-stream" in str(response.headers.get("content-type", "")).lower()


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _whole_body(body: bytes, prompt_estimate: Callable[[], int]) -> Reply:
    """A whole chat completion sent as the answer to a streamed request."""
    data = json.loads(body)  # ValueError for a garbled body: retried like any garbled response
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict) or choices[0].get("message") is None:
        raise ValueError("the response has no choices")
    message, usage = choices[0]["message"], data.get("usage")
    return build_reply(
        message.get("content") or "",
        reasoning_of(_Attrs(message)),
        choices[0].get("finish_reason"),
        _Attrs(usage) if isinstance(usage, dict) else None,
        prompt_estimate() if usage is None else 0,
    )


class _Attrs:
    """A JSON object read by attribute, as the SDK's models are."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        return _Attrs(value) if isinstance(value, dict) else value


async def read_stream(
    open_stream: Callable[[], Awaitable[Any]],
    *,
    first_token_s: float,
    idle_s: float,
    prompt_estimate: Callable[[], int],
    written: Written | None = None,
) -> tuple[Reply, bool]:
    """The reply of the stream `open_stream()` starts (an `openai.AsyncStream` of chat chunks), and
    whether it was streamed (False: the server sent the whole completion as one JSON body). `written`
    hears the content as it arrives.

    StreamStalledError when a clock runs out; StreamIncompleteError when the stream ends unfinished."""
    loop = asyncio.get_running_loop()
    clock, seconds = "first_token", first_token_s
    stream: Any = None
    content: list[str] = []
    reasoning: list[str] = []
    finish: str | None = None
    usage: Any = None
    timer: asyncio.Timeout | None = None
    try:
        async with asyncio.timeout(first_token_s) as timer:
            stream = await open_stream()
            if not _is_event_stream(stream.response):
                return _whole_body(await stream.response.aread(), prompt_estimate), False
            if written is not None:
                written.start()
            async for chunk in stream:
                usage = _field(chunk, "usage") or usage
                for choice in _field(chunk, "choices") or []:
                    delta = _field(choice, "delta")
                    if delta is not None:
                        if text := _field(delta, "content"):
                            content.append(text)
                            if written is not None:
                                written.add(text)
                        if thought := reasoning_of(delta):
                            reasoning.append(thought)
                    finish = _field(choice, "finish_reason") or finish
                if clock == "first_token" and (content or reasoning or finish):
                    clock, seconds = "idle", idle_s
                timer.reschedule(loop.time() + seconds)
    except TimeoutError as exc:
        if timer is not None and timer.expired():
            raise StreamStalledError(clock, seconds) from exc
        raise
    finally:
        if stream is not None:
            await stream.close()  # an unfinished response drops its connection: the server stops
    if finish is None:
        raise StreamIncompleteError("the stream ended before the reply said it was finished")
    text = "".join(content)
    return build_reply(
        text, "".join(reasoning), finish, usage, prompt_estimate() if usage is None else 0
    ), True
