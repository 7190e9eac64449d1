"""A chat's last question made to stand alone, for the OpenAI-compatible door (`openai_compat`).

Every mode answers one question with no memory of a conversation, so "and what did he do next?" needs
the turns before it. With a model, one call (`CHAT_CONDENSE`) rewrites the last user message from the
conversation; offline there is nothing that could do this faithfully, and the last message is asked
as written (the task's offline form, which the door does not even run when there is no history).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline import prompts
from pipeline.engine.task import Task, TaskContext
from pipeline.service.chat_citations import SOURCES_HEADING

# The conversation the model reads is its last turns, this many characters at most: enough for the
# references a follow-up makes, without a long chat's whole history in every call.
MAX_HISTORY_CHARS = 6000


@dataclass(frozen=True)
class CondenseRequest:
    history: str  # the earlier turns, one "Role: text" paragraph each
    question: str  # the last user message


async def _offline(request: CondenseRequest, ctx: TaskContext) -> str:
    return request.question


async def _model(request: CondenseRequest, ctx: TaskContext) -> str:
    messages = prompts.CHAT_CONDENSE.messages(history=request.history, question=request.question)
    reply = await ctx.ask_text(prompts.CHAT_CONDENSE, messages)
    # A model may add a preamble or a second line; the question is the first non-blank line.
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    return lines[0] if lines else request.question


CONDENSE = Task("chat_condense", offline=_offline, model=_model, limit="local_answer")


def history_text(turns: list[tuple[str, str]]) -> str:
    """The earlier turns as the prompt shows them, newest kept when they are too long, each assistant
    turn without the sources list this door appended to it."""
    paragraphs: list[str] = []
    size = 0
    for role, text in reversed(turns):
        # the sources list this door appended to an answer, which a client sends back with it
        text = text.split(SOURCES_HEADING, 1)[0].strip()
        if not text or role not in ("user", "assistant"):
            continue
        paragraph = f"{role.capitalize()}: {text}"
        if size + len(paragraph) > MAX_HISTORY_CHARS:
            if not paragraphs:  # one long turn: its end is what the question follows
                paragraphs.append(paragraph[-MAX_HISTORY_CHARS:])
            break
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(reversed(paragraphs))


def message_text(content: Any) -> str:
    """A chat message's text: a string, or OpenAI's list of parts (the text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""
