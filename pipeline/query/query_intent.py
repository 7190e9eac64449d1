"""Query parsing: the entities, keywords and themes of a question, in its offline and LLM forms.

The engine picks the form (`Engine.query_intent`), so this module is part of the engine's contract and
imports nothing of query time (see tests/test_layout.py).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

from pipeline import prompts
from pipeline.core.ner import NAMING_LABELS, entity_spans

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves tell explain
    describe related relate relationship between many much kind sort way ways thing things give list name""".split()
)
QUESTION_WORDS = frozenset(
    "what who whom whose which when where why how is are was were do does did can could".split()
)
_CAPITALISED = re.compile(
    r"\b(?:[A-Z][\w'’.-]*|[A-Z]{2,})(?:\s+(?:of|the|de|von|van|and|&)?\s*(?:[A-Z][\w'’.-]*))*"
)
_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


class QueryIntent(BaseModel):
    """Every field is required: a reply that leaves one out (a cut-off or careless one) fails validation
    and is repaired or replaced by the offline intent, instead of passing as "the question names nothing".
    An empty list is an answer; a missing one is not."""

    entities: list[str] = Field(description="Named things the question is about")
    keywords: list[str] = Field(description="Other significant words or phrases")
    themes: list[str] = Field(description="Broader topics the question touches")

    @field_validator("entities", "keywords", "themes")
    @classmethod
    def _clean(cls, values: list[str]) -> list[str]:
        return list(dict.fromkeys(v.strip() for v in values if isinstance(v, str) and v.strip()))


def offline_intent(question: str) -> QueryIntent:
    """Entities: quoted phrases, the names spaCy's NER finds (`pipeline.core.ner`, as the corpus's were
    found), and capitalised runs of two or more words or acronyms it did not cover; a lone capitalised
    word it does not tag ('State', 'East', 'Love') is a keyword, not a name. Other content words are
    keywords; themes come from both."""
    entities = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    spans = [s for s in entity_spans([question])[0] if s.label in NAMING_LABELS]
    entities += [_strip_article(s.text) for s in spans]
    for m in _CAPITALISED.finditer(question):
        if any(s.start < m.end() and m.start() < s.end for s in spans):
            continue
        words = m.group(0).strip(" .'’").split()
        while words and words[0].lower() in QUESTION_WORDS | STOPWORDS:
            words = words[1:]  # "What Scrooge" -> "Scrooge": the sentence's first word is not a name
        if len(words) >= 2 or (words and words[0].isupper() and len(words[0]) >= 2):
            entities.append(" ".join(words))
    entities = list(dict.fromkeys(e for e in entities if e))
    entity_words = {w.lower() for e in entities for w in _WORD.findall(e)}
    keywords = [
        w
        for w in (t.lower().strip("'’-") for t in _WORD.findall(question))
        if len(w) > 2 and w not in STOPWORDS and w not in QUESTION_WORDS and w not in entity_words
    ]
    themes = keywords[:]  # offline, the question's content words stand in for its themes
    return QueryIntent(entities=entities, keywords=keywords, themes=themes)


def _strip_article(name: str) -> str:
    words = name.strip(" .'’").split()
    return " ".join(words[1:] if words and words[0].lower() == "the" else words)


async def llm_intent(client: Any, question: str, *, deadline: float | None, cancel: Any) -> QueryIntent:
    prompt = prompts.LOCAL_QUERY_INTENT
    return await client.complete_json(
        prompt.messages(question=question),
        QueryIntent,
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
    )
