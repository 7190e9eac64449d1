"""Which mode answers a question: the `ROUTE` task, one cheap classification, in its offline and LLM forms.

The routes are the registry's routable modes, each with its `RouteHint` (`pipeline.query.common.mode`):
a line for the model's prompt, plain example questions (the offline form's prototypes), and whether an
offline choice of it is settled by comparison. The five built-in modes and what each is for (peer
evaluations, GraphRAG-Bench and "When to use graphs in RAG": plain RAG wins on fact lookups, graph modes
on reasoning and summaries):
- basic: a fact stated in one or two passages;
- local: how specific named things relate (the knowledge graph around them);
- global: a summary or the main themes of the whole collection;
- drift: broad and detailed at once, or writing something new from the material;
- lazy: reasoning over facts spread across several passages, within a fixed budget.

The model form asks for `{route, reason}` (validated: a route that is no routable mode fails the reply,
which the client repairs once; cached by the client like every call). The offline form reads the question's form,
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
8. otherwise the mode of the nearest prototype (each routable mode's `RouteHint.examples`: a few plain
   questions per mode, written once from the descriptions above; a registered mode's own examples make it
   a candidate here) by the embedding model's cosine, except that a question opening
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
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, Field, field_validator

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.query.common.mode import MODES, Mode, RouteHint, routable

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


def route_hints(modes: Mapping[str, Mode] | None = None) -> dict[str, RouteHint]:
    """The routable modes' hints, in registry order (`modes`: a scope's; default the registry's)."""
    found = MODES if modes is None else modes
    return {n: m.route_hint for n, m in found.items() if m.routable and m.route_hint is not None}


def route_messages(question: str, hints: Mapping[str, RouteHint]) -> list[dict[str, str]]:
    """The model form's messages: the routes, each with its line, and the question."""
    routes = "\n".join(f"- {h.when}" for h in hints.values())
    return prompts.ROUTE_QUESTION.messages(question=question, routes=routes, names="|".join(hints))


class RouteChoice(BaseModel):
    route: str = Field(description="A routable query mode: basic, local, global, drift, lazy, ...")
    reason: str = Field(max_length=400, description="Why, in one sentence")

    @field_validator("route")
    @classmethod
    def _routable(cls, v: str) -> str:
        if (modes := routable()) and v not in modes:
            raise ValueError(f"route must be one of {', '.join(modes)}; not {v!r}")
        return v


# The passage modes the offline form asks auto to compare (`auto.search`, rule 4), in the order that breaks
# ties: offline they cost no model call, and the question's form cannot tell which suits a corpus.
COMPARED: tuple[str, ...] = ("basic", "local", "lazy")


class ComparedRoute(RouteChoice):
    """The offline form's choice: the modes auto should run and compare (none for a summary: global)."""

    compare: tuple[str, ...] = ()


@dataclass(frozen=True)
class RouteRequest:
    question: str
    hints: Mapping[str, RouteHint] = field(default_factory=route_hints)  # the routes it may take


_MATRICES: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[Embedder, list[str], np.ndarray]] = {}


def _prototype_matrix(embedder: Embedder, hints: Mapping[str, RouteHint]) -> tuple[list[str], np.ndarray]:
    """The prototypes' vectors, embedded once per embedder and set of prototypes (the embedder is kept
    so its id stays its)."""
    pairs = tuple((mode, q) for mode, hint in hints.items() for q in hint.examples)
    if not pairs:
        raise ValueError("no routable query mode has example questions: is pipeline.query.registry imported?")
    key = (id(embedder), pairs)
    hit = _MATRICES.get(key)
    if hit is None or hit[0] is not embedder:
        hit = _MATRICES[key] = (embedder, [m for m, _ in pairs], embedder.embed([q for _, q in pairs]))
    return hit[1], hit[2]


def _asks_for_several(text: str) -> bool:
    """'what/which' + (a word +) a plural noun: "which groups", "what specific effects"."""
    for m in _AFTER_WH.finditer(text):
        for word in filter(None, m.groups()):
            if word.endswith("s") and not word.endswith("ss") and word not in _NOT_PLURAL and len(word) > 3:
                return True
    return False


def offline_route(
    question: str, embedder: Embedder, hints: Mapping[str, RouteHint] | None = None
) -> RouteChoice:
    """Rules 1-8 (`hints`: the routes it may take; default the registry's routable modes)."""
    hints = route_hints() if hints is None else hints
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
    modes, matrix = _prototype_matrix(embedder, hints)
    sims = matrix @ embedder.embed([question])[0]
    best = int(np.argmax(sims))
    route, cosine = modes[best], float(sims[best])
    if route == "global" and FACT_OPENING.search(text):
        return RouteChoice(
            route="lazy", reason=f"opens like a fact lookup; nearest prototype global ({cosine:.2f})"
        )
    return RouteChoice(route=route, reason=f"nearest prototype: {route} (cosine {cosine:.2f})")


async def _offline(request: RouteRequest, ctx: TaskContext) -> RouteChoice:
    choice = offline_route(request.question, ctx.need_embedder("routing"), request.hints)
    hint = request.hints.get(choice.route)
    return ComparedRoute(
        **choice.model_dump(), compare=COMPARED if hint is not None and hint.compared else ()
    )


async def _model(request: RouteRequest, ctx: TaskContext) -> RouteChoice:
    messages = route_messages(request.question, request.hints)
    return await ctx.ask(prompts.ROUTE_QUESTION, messages, RouteChoice)


# A route and a sentence: the map's output limit is ample.
ROUTE: Task[RouteRequest, RouteChoice] = Task("route_question", offline=_offline, model=_model, limit="map")
