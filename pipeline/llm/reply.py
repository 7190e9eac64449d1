"""One chat reply as the pipeline uses it, whether the server streamed it or sent it whole.

Thinking models put their reasoning before the answer: in the content, as `<think>…</think>` (some chat
templates open the tag in the prompt, so only `</think>` shows), or beside it as `reasoning_content`
(llama.cpp, vLLM, DeepSeek). The reasoning is never parsed, validated or cached: `Reply.text` is the
answer after it, and the reasoning's tokens are counted (`reasoning_tokens`; the server's own count when
it gives one, else tiktoken's count of the reasoning text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.core.tokens import count_tokens

_OPEN, _CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    # "stop" when the model finished; "length" when max_tokens cut it off (the text is then incomplete,
    # whatever it looks like). None when the server does not say.
    finish_reason: str | None = None
    reasoning_tokens: int = 0  # part of completion_tokens: thinking before the answer

    @property
    def cut_off(self) -> bool:
        return self.finish_reason == "length"


def split_reasoning(content: str) -> tuple[str, str]:
    """(answer, reasoning) of a reply's content: a leading `<think>…</think>` (or a reply that only closes
    the tag) is reasoning. A think block never closed is all reasoning: the model gave no answer yet."""
    stripped = content.lstrip()
    if stripped.startswith(_OPEN):
        inner = stripped[len(_OPEN) :]
        if _CLOSE not in inner:
            return "", inner
        thought, answer = inner.split(_CLOSE, 1)
        return answer.lstrip(), thought
    if _CLOSE in content and _OPEN not in content.split(_CLOSE, 1)[0]:
        thought, answer = content.split(_CLOSE, 1)
        return answer.lstrip(), thought
    return content, ""


def build_reply(
    content: str,
    reasoning_content: str,
    finish_reason: str | None,
    usage: Any,
    prompt_estimate: int,
) -> Reply:
    """The Reply for a message's content (+ the server's separate reasoning) and its `usage` object.

    A server that sends no usage (some do not, streaming) is counted with tiktoken: `prompt_estimate`
    for the prompt and the generated text for the completion, so budgets and reports are not blind."""
    answer, thought = split_reasoning(content)
    reasoning = "\n".join(part for part in (reasoning_content, thought) if part)
    details = getattr(usage, "completion_tokens_details", None)
    reasoning_tokens = int(getattr(details, "reasoning_tokens", 0) or 0)
    if reasoning and not reasoning_tokens:
        reasoning_tokens = count_tokens(reasoning)
    if usage is None:
        return Reply(
            answer,
            prompt_estimate,
            count_tokens(content) + (count_tokens(reasoning_content) if reasoning_content else 0),
            finish_reason,
            reasoning_tokens,
        )
    return Reply(
        answer,
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
        finish_reason,
        reasoning_tokens,
    )


def reasoning_of(message: Any) -> str:
    """The `reasoning_content` (or `reasoning`, Ollama/OpenRouter) a message or delta carries beside its
    content; the SDK keeps fields it does not know as extra attributes."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return ""
