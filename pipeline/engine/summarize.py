"""The example task: summarize a few texts (offline: the first sentences, in order, within the words).

Kept as the smallest complete task: its models, its prompt's use, both forms and the `Task` object
(`pipeline/engine/task.py` says how a task is written). Tests and benches use it to exercise the engine.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.core.sentences import split_sentences
from pipeline.engine.task import Task, TaskContext


class SummarizeRequest(BaseModel):
    texts: list[str]
    max_words: int = Field(default=60, ge=1)


class Summary(BaseModel):
    summary: str = Field(description="The summary, using only facts from the texts")


def extractive_summary(texts: Sequence[str], max_words: int) -> str:
    """Sentences in their original order, duplicates dropped, cut at `max_words` words."""
    seen: set[str] = set()
    words: list[str] = []
    for text in texts:
        for sentence in (s.text for s in split_sentences(" ".join(text.split()))):
            key = sentence.lower().strip(" .!?")
            if not key or key in seen:
                continue
            seen.add(key)
            room = max_words - len(words)
            if room <= 0:
                return " ".join(words)
            words.extend(sentence.split()[:room])
    return " ".join(words)


async def _offline(request: SummarizeRequest, ctx: TaskContext) -> Summary:
    return Summary(summary=extractive_summary(request.texts, request.max_words))


async def _model(request: SummarizeRequest, ctx: TaskContext) -> Summary:
    prompt = prompts.SUMMARIZE
    texts = "\n".join(f"- {t.strip()}" for t in request.texts)
    return await ctx.ask(prompt, prompt.messages(texts=texts, max_words=request.max_words), Summary)


SUMMARIZE: Task[SummarizeRequest, Summary] = Task("summarize", offline=_offline, model=_model)
