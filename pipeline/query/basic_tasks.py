"""Basic search's one task — the answer from the nearest passages — in its offline and LLM forms
(`Engine.basic_answer`). The context is a `LocalContext` holding only its Sources section, so the answer
cites `[Data: Sources (7)]` and the local search's citation parser resolves it."""

from __future__ import annotations

from typing import Any

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.query.local_tasks import LocalContext, offline_answer


def basic_messages(question: str, context_text: str) -> list[dict[str, str]]:
    """The answer prompt as sent: the context builder measures its budget on exactly this."""
    return prompts.BASIC_ANSWER.messages(question=question, context=context_text or "(no data)")


async def llm_basic_answer(
    client: Any,
    question: str,
    context: LocalContext,
    *,
    deadline: float | None,
    cancel: Any,
    max_tokens: int | None = None,
) -> str:
    prompt = prompts.BASIC_ANSWER
    return await client.complete_text(
        basic_messages(question, context.text),
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
        max_tokens=max_tokens,
    )


def offline_basic_answer(question: str, context: LocalContext, embedder: Embedder) -> str:
    """The passages' sentences closest to the question, each cited to its passage."""
    return offline_answer(question, context, embedder)
