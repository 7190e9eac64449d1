"""A scripted model for local search: it tells the question parse, the community selection and the answer
apart by their system prompts, replies to each as a model would (the answer cites the first rows of its
context, plus one id it made up), and keeps every request it was sent."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable

from pipeline import prompts

QUESTION = "How is Scrooge related to Bob Cratchit?"


TASKS = {
    "intent": prompts.LOCAL_QUERY_INTENT.system,
    "select": prompts.LOCAL_SELECT_COMMUNITIES.system,
    "answer": prompts.LOCAL_ANSWER.system,
}


def table(user: str, label: str) -> list[list[str]]:
    """The rows (cells split on "|") of one section of the answer prompt's data tables."""
    match = re.search(rf"-----{label}-----\n[^\n]*\n((?:[^\n]+\n?)*)", user)
    return [line.split("|") for line in match.group(1).splitlines()] if match else []


def cited_answer(user: str) -> str:
    """An answer as a model writes it: facts cited to the first rows of the context, and one id it made up."""
    entities = [r[0] for r in table(user, "Entities")[:2]]
    relationship = table(user, "Relationships")[0][0]
    source = table(user, "Sources")[0][0]
    return (
        f"Bob Cratchit is Scrooge's clerk [Data: Entities ({', '.join(entities)}); "
        f"Relationships ({relationship}); Sources ({source})]. He is poorly paid [Data: Entities (99999)]."
    )


class ScriptedModel:
    """Replies by task (told apart by the system prompt) and keeps every request it was sent."""

    def __init__(
        self,
        intent: dict | None = None,
        select: Callable[[list[int]], list[int]] = lambda offered: offered[:1],
        answer: Callable[[str], str] = cited_answer,
    ) -> None:
        self.intent = intent or {"entities": ["Scrooge", "Bob Cratchit"], "keywords": ["clerk"], "themes": []}
        self.select = select
        self.answer = answer
        self.requests: dict[str, list[dict]] = defaultdict(list)

    def __call__(self, request: dict) -> str:
        system, user = request["messages"][0]["content"], request["messages"][1]["content"]
        task = next(t for t, s in TASKS.items() if system.startswith(s))
        self.requests[task].append(request)
        if task == "intent":
            return json.dumps(self.intent)
        if task == "select":
            offered = [int(i) for i in re.findall(r"^(\d+): ", user, re.MULTILINE)]
            return json.dumps({"selected_community_ids": self.select(offered)})
        return self.answer(user)

    def answer_prompt(self) -> str:
        (request,) = self.requests["answer"]
        return "\n".join(m["content"] for m in request["messages"])
