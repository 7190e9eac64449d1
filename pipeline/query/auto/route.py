"""Which mode answers a question: the `ROUTE` task, one cheap classification, in its offline and LLM forms.

The five modes and what each is for (peer evaluations, GraphRAG-Bench and "When to use graphs in RAG":
plain RAG wins on fact lookups, graph modes on reasoning and summaries):
- basic: a fact stated in one or two passages;
- local: how specific named things relate (the knowledge graph around them);
- global: a summary or the main themes of the whole collection;
- drift: broad and detailed at once, or writing something new from the material;
- lazy: reasoning over facts spread across several passages, within a fixed budget.

The model form asks for `{route, reason}` (validated: a route outside the five fails the reply, which the
client repairs once; cached by the client like every call). The offline form reads the question's form,
the wh-question taxonomy of question answering, rules in order:
1. summary wording ("summarize", "overview", "main themes", "as a whole", ...) -> global;
2. creative wording ("write", "imagine", "compose", "in the style of", ...) -> drift;
3. relation wording ("related to", "relationship between", "involved with", "role in", ...) -> local;
4. explanatory or broad wording ("why", "how did", "in what ways", "what impact", "key", ...) -> lazy;
5. a wh-question that asks for several things or a description (what/which + a plural: "which groups",
   "what effects"; "who were"; "the nature of", "patterns", "circumstances", ...) -> lazy;
6. a wh-question that reaches its answer through another thing (a multi-hop fact: a noun phrase with a
   relative clause, "the country where ...", "the company that ..."; or a role of a named thing, "the
   author of Brand") -> local, whose entity graph follows the chain where a passage search finds only
   its first link;
7. any other wh-question (who, what, when, where, which, how many, ...) is a fact lookup -> basic;
8. otherwise the mode of the nearest prototype (`PROTOTYPES`: a few plain questions per mode, written
   once from the descriptions above) by the embedding model's cosine, except that a question opening
   like a lookup never goes to global (lazy instead): a fact wh-question, a yes/no question ("Can I put
   inline data inside a loop?") or a how-to ("How can I give the x axis a probit scale?"). Each asks
   about one stated thing, and their nearest prototype is a guess (cosine 0.05-0.10 on the dev manuals,
   where two such fact questions went to global and got no page, issue 58).
The cue lists are general English question forms. Rules 1-4 and 7 were written before `make eval`
measured them on GraphRAG-Bench novel split A; rule 5 was added after that first measurement sent 34 of its
362 summaries to basic, so split A's table is not a held-out measure of rule 5. Rule 6 was added after
`pipeline eval` on MuSiQue-100 sent 45 of its first 50 questions to basic (answer coverage 66%) where local
had 87%: MuSiQue's table is not a held-out measure of rule 6 (it sends 68 of MuSiQue's 100 questions, and
82 of split A's 1,010, to local).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext

Route = Literal["basic", "local", "global", "drift", "lazy"]

SUMMARY = re.compile(
    r"\b(summari[sz]e|summary|overview|main (themes?|topics?|ideas?|points?|events?)|key themes?|as a whole|"
    r"overall|recurring|in general)\b"
)
CREATIVE = re.compile(
    r"^(write|compose|imagine|create|draft|rewrite|retell|pretend|invent)\b|\b(in the style of|as if you were|"
    r"a (poem|diary entry|letter|dialogue|short story|speech|monologue))\b"
)
RELATION = re.compile(
    r"\b(related to|relat(e|es|ed) to|relationships? (between|with|to)|connection (between|with|to)|"
    r"connected (to|with)|involved (with|in)|involvement (with|in)|roles? (of|in|did|does|played))\b"
)
BROAD = re.compile(
    r"\b(why|how (did|does|do|has|have|had|was|were|is|are|could|would|might)|in what ways?|"
    r"what (impact|effect|influence|significance|role)|impact|influence|significan\w*|evolv\w*|"
    r"contribut\w*|key|dynamics|interplay|reflect\w*|shap(e|ed|es|ing))\b"
)
DESCRIPTIVE = re.compile(
    r"\b(who|what|which) (were|are)\b|\b(nature|patterns?|sequence|evidence|circumstances|background|"
    r"characteristics|happened|interactions?|connections|relationships|aspects?|ways|steps)\b"
)
_AFTER_WH = re.compile(r"\b(?:what|which) (\w+)(?: (\w+))?")
_NOT_PLURAL = frozenset("was is has does this his its us as always perhaps less".split())
WH = re.compile(r"\b(who|whom|whose|what|when|where|which|how (many|much|old|long|far))\b")
# Rule 6, on the question as written (the capital marks a named thing): "the country where", "the
# association which published", "the author of Brand".
COMPOSITIONAL = re.compile(
    r"\b(?:the|a|an)(?: [\w'-]+){1,3}? (?:where|which|that|who|whom|whose|in which|of which|when)\b", re.I
)
ROLE_OF = re.compile(r"\bthe(?: [a-z][\w-]*){1,2} of (?:the )?[A-Z]")
FACT_OPENING = re.compile(
    r"^(who|whom|whose|when|where|which|what (is|was|were|are) the (name|date|year)|how (many|much|old|long)|"
    r"in (what|which) (year|city|country|place)|what year|"
    r"(can|could|is|are|was|were|does|do|did|should|will|would|may|must|has|have|had)|how (can|to|should))\b"
)
PROTOTYPES: dict[str, tuple[str, ...]] = {
    "basic": (
        "Who wrote the letter?",
        "When was the company founded?",
        "What is the name of the ship's captain?",
        "Where was the treaty signed?",
        "How many children did she have?",
    ),
    "local": (
        "How is the doctor related to the family he treats?",
        "What role does the lawyer play in the dispute over the inheritance?",
        "What is the relationship between the king and his advisor?",
        "Which people does the merchant deal with, and how?",
    ),
    "global": (
        "What are the main themes of these documents?",
        "Summarize the story as a whole.",
        "What are the most important topics across the collection?",
        "Give an overview of the events described.",
    ),
    "drift": (
        "Describe how the main character changes over the course of the story, with examples.",
        "Write a letter from one character to another about what happened to them.",
        "Imagine a different ending to the story and describe it.",
        "What does the collection say about family, and where does it show it?",
    ),
    "lazy": (
        "Why did the merchant leave the city after the fire?",
        "What led to the quarrel between the brothers, and how was it resolved?",
        "How did the decision at the meeting affect the people involved later?",
        "What connects the accident to the company's earlier choices?",
    ),
}


class RouteChoice(BaseModel):
    route: Route = Field(description="basic, local, global, drift or lazy")
    reason: str = Field(max_length=400, description="Why, in one sentence")


# The passage modes the offline form asks auto to compare (`auto.search`, rule 4), in the order that breaks
# ties: offline they cost no model call, and the question's form cannot tell which suits a corpus.
COMPARED: tuple[str, ...] = ("basic", "local", "lazy")


class ComparedRoute(RouteChoice):
    """The offline form's choice: the modes auto should run and compare (none for a summary: global)."""

    compare: tuple[str, ...] = ()


@dataclass(frozen=True)
class RouteRequest:
    question: str


_MATRICES: dict[int, tuple[Embedder, list[str], np.ndarray]] = {}


def _prototype_matrix(embedder: Embedder) -> tuple[list[str], np.ndarray]:
    """The prototypes' vectors, embedded once per embedder (the embedder is kept so its id stays its)."""
    hit = _MATRICES.get(id(embedder))
    if hit is None or hit[0] is not embedder:
        modes = [m for m, qs in PROTOTYPES.items() for _ in qs]
        hit = _MATRICES[id(embedder)] = (
            embedder,
            modes,
            embedder.embed([q for qs in PROTOTYPES.values() for q in qs]),
        )
    return hit[1], hit[2]


def _asks_for_several(text: str) -> bool:
    """'what/which' + (a word +) a plural noun: "which groups", "what specific effects"."""
    for m in _AFTER_WH.finditer(text):
        for word in filter(None, m.groups()):
            if word.endswith("s") and not word.endswith("ss") and word not in _NOT_PLURAL and len(word) > 3:
                return True
    return False


def offline_route(question: str, embedder: Embedder) -> RouteChoice:
    text = " ".join(question.lower().split())
    if SUMMARY.search(text):
        return RouteChoice(route="global", reason="summary wording: a question about the whole collection")
    if CREATIVE.search(text):
        return RouteChoice(route="drift", reason="creative wording: broad material and its details")
    if RELATION.search(text):
        return RouteChoice(route="local", reason="relation wording: how named things relate")
    if BROAD.search(text):
        return RouteChoice(route="lazy", reason="explanatory wording: facts from several passages")
    if DESCRIPTIVE.search(text) or _asks_for_several(text):
        return RouteChoice(route="lazy", reason="asks for several things or a description: several passages")
    if WH.search(text) and (COMPOSITIONAL.search(question) or ROLE_OF.search(question)):
        return RouteChoice(route="local", reason="a fact reached through another thing: a multi-hop lookup")
    if WH.search(text):
        return RouteChoice(route="basic", reason="a wh-question with no broader cue: a fact lookup")
    modes, matrix = _prototype_matrix(embedder)
    sims = matrix @ embedder.embed([question])[0]
    best = int(np.argmax(sims))
    route, cosine = modes[best], float(sims[best])
    if route == "global" and FACT_OPENING.search(text):
        return RouteChoice(
            route="lazy", reason=f"opens like a fact lookup; nearest prototype global ({cosine:.2f})"
        )
    return RouteChoice(route=route, reason=f"nearest prototype: {route} (cosine {cosine:.2f})")  # type: ignore[arg-type]


async def _offline(request: RouteRequest, ctx: TaskContext) -> RouteChoice:
    choice = offline_route(request.question, ctx.need_embedder("routing"))
    return ComparedRoute(**choice.model_dump(), compare=() if choice.route == "global" else COMPARED)


async def _model(request: RouteRequest, ctx: TaskContext) -> RouteChoice:
    prompt = prompts.ROUTE_QUESTION
    return await ctx.ask(prompt, prompt.messages(question=request.question), RouteChoice)


# A route and a sentence: the map's output limit is ample.
ROUTE: Task[RouteRequest, RouteChoice] = Task("route_question", offline=_offline, model=_model, limit="map")
