"""A follow-up in the web app's conversation made to stand alone: `POST /v1/condense`.

Every mode answers one question with no memory, so the page asks a follow-up ("and what did he do
next?") as the question this returns: with a model configured, the conversation and the follow-up are
condensed into one standalone question by the chat door's own call (`chat_condense`, through
`openai_compat.standalone_question`: the key's concurrency slot, the service's deadline, the same
errors); offline (the engine called no model) nothing could do that faithfully, and the follow-up is
handed back as written with `condensed: false` and the reason, which the page shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from pipeline.llm.batch import deadline_in
from pipeline.service.caller import Caller
from pipeline.service.chat_condense import history_text
from pipeline.service.models import MAX_QUESTION_CHARS, Namespace, Question
from pipeline.service.openai_compat import Completion, standalone_question
from pipeline.service.queries import QueryService

MAX_TURNS = 20  # earlier turns a body may carry; the prompt reads the newest 6,000 characters of them
MAX_ANSWER_CHARS = 20_000
OFFLINE = "no model is configured, so the follow-up was asked alone, without the earlier questions"


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    question: Annotated[str, Field(max_length=MAX_QUESTION_CHARS)]
    answer: Annotated[str, Field(max_length=MAX_ANSWER_CHARS)] = ""


class CondenseBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    namespace: Namespace
    history: list[Turn] = Field(
        default_factory=list, max_length=MAX_TURNS, description="Earlier turns, oldest first"
    )
    question: Question


@dataclass
class _Spent(Completion):
    """What condensing cost, and whether a model answered at all (the offline engine calls none)."""

    answered: int = 0

    def count(self, usage: Any) -> None:
        super().count(usage)
        if isinstance(usage, dict):
            self.answered += int(usage.get("calls") or 0) + int(usage.get("cache_hits") or 0)


def install_follow_up(app: FastAPI, service: QueryService) -> None:
    @app.post("/v1/condense", tags=["web app"])
    async def condense(body: CondenseBody, caller: Caller) -> dict[str, Any]:
        """The follow-up `question` as a standalone question, from the conversation's earlier turns:
        `{question, condensed, reason}`; `condensed` is false (and the question as written) with no
        earlier turn, or offline, where no model could read them."""
        caller.authorize(body.namespace)  # 403 for a namespace the key does not cover, as a query
        turns: list[tuple[str, str]] = []
        for turn in body.history:
            turns += [("user", turn.question), ("assistant", turn.answer)]
        if not history_text(turns):
            return {"question": body.question, "condensed": False, "reason": "no earlier question"}
        spent = _Spent(model="condense")
        deadline = deadline_in(service.settings.service_timeout_s)
        question = await standalone_question(service, caller, turns, body.question, deadline, spent)
        usage = {"prompt_tokens": spent.prompt_tokens, "completion_tokens": spent.completion_tokens}
        if not spent.answered:
            return {"question": body.question, "condensed": False, "reason": OFFLINE, "usage": usage}
        return {"question": question, "condensed": True, "reason": None, "usage": usage}
