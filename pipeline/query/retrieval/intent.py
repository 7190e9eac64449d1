"""Query parsing: the entities, keywords and themes of a question, in its offline and LLM forms (the
`INTENT` task; the request is the question)."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator

from pipeline import prompts
from pipeline.core.ner import NAMING_LABELS, entity_spans
from pipeline.engine.task import Task, TaskContext

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
# Words that name the collection or ask for its outline rather than for any content: a question made of
# these alone (after stop words) asks about the whole corpus.
COLLECTION_WORDS = frozenset(
    """main key major overall general central common recurring important biggest largest primary principal
    topic topics theme themes subject subjects idea ideas issue issues area areas summary summarize summarise
    overview outline content contents cover covers covered covering discuss discussed discusses mention
    mentioned address addressed passage passages document documents text texts corpus collection dataset
    data article articles story stories book books chapter chapters whole entire present presented""".split()
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


def is_broad(question: str) -> bool:
    """Whether the question names nothing but the collection (rule 4 of `pipeline.query.global_.selection`)."""
    intent = offline_intent(question)
    # A capitalised first word ("Summarize the key ideas") is parsed as a name; one made of collection
    # words is not one.
    names = [e for e in intent.entities if not all(w.lower() in COLLECTION_WORDS for w in e.split())]
    return not names and all(k in COLLECTION_WORDS for k in intent.keywords)


async def _offline(question: str, ctx: TaskContext) -> QueryIntent:
    return offline_intent(question)


async def _model(question: str, ctx: TaskContext) -> QueryIntent:
    prompt = prompts.LOCAL_QUERY_INTENT
    return await ctx.ask(prompt, prompt.messages(question=question), QueryIntent)


INTENT: Task[str, QueryIntent] = Task("query_intent", offline=_offline, model=_model)
