"""Every prompt the pipeline sends to a model, in one place.

Each prompt carries a version string that is part of the LLM cache key: change a prompt's wording and
bump its version, and every call that used it is asked again (and only those). The JSON shape of a
task's answer is not written here: the client appends the task's pydantic schema to the system prompt.

To add a task's prompt: define a `Prompt` below with a fresh `<name>-v1` version and register it in
`PROMPTS`. Templates use `str.format` fields; write literal braces as `{{` and `}}`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    system: str
    user: str

    def messages(self, **values: Any) -> list[dict[str, str]]:
        """The chat messages with `values` filled into the user template."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**values)},
        ]


SUMMARIZE = Prompt(
    name="summarize",
    version="summarize-v1",
    system=(
        "You write short, factual summaries. Use only the information in the given texts; "
        "do not add facts, opinions or speculation."
    ),
    user=(
        "Summarize the following texts in at most {max_words} words.\n\n"
        "Texts:\n{texts}\n\n"
        'Answer as JSON: {{"summary": "..."}}'
    ),
)

PROMPTS: dict[str, Prompt] = {p.name: p for p in (SUMMARIZE,)}


# ---- graph extraction (pipeline.ops.extraction.llm) and description summaries (pipeline.ops.descriptions) ----
# GraphRAG's extraction prompt, asking for JSON instead of delimited tuples, with claims in the same call.
EXTRACT_GRAPH = Prompt(
    name="extract_graph",
    version="extract_graph-v1",
    system=(
        "You extract a knowledge graph from text: entities, the relationships between them, and claims. "
        "Use only what the text says."
    ),
    user=(
        "-Goal-\n"
        "Given a text and a list of entity types, identify all entities of those types in the text, all "
        "relationships among the identified entities, and the claims the text makes about them.\n\n"
        "-Steps-\n"
        "1. Identify all entities. For each: `name` (capitalised as in the text), `type` (one of: "
        "{entity_types}), `description` (a comprehensive description of the entity's attributes and "
        "activities).\n"
        "2. Among the entities of step 1, identify every pair that is clearly related. For each: `source` "
        "and `target` (names exactly as in step 1), `description` (why they are related) and `strength` "
        "(an integer from 1, weak, to 10, strong).\n"
        "3. {claim_instruction}\n\n"
        "Entity types: {entity_types}\n"
        "Text:\n{input_text}\n\n"
        'Answer as JSON: {{"entities": [...], "relationships": [...], "claims": [...]}}'
    ),
)
EXTRACT_GRAPH_CLAIMS = (
    "Claims: {claim_description} For each claim about an entity of step 1: `subject` (entity name), "
    "`object` (another entity name, or null), `claim_type` (a short upper-case category), `status` (TRUE, "
    "FALSE or SUSPECTED), `start_date` and `end_date` (ISO-8601, the same date twice for a single date, "
    "or null), `description` (the claim and its evidence) and `source_text` (a verbatim quote from the text)."
)
EXTRACT_GRAPH_NO_CLAIMS = "Claims are not needed: answer with an empty `claims` list."
# A gleaning round: the conversation so far plus this user turn (its system prompt is not used).
EXTRACT_GRAPH_GLEAN = Prompt(
    name="extract_graph_glean",
    version="extract_graph_glean-v1",
    system="",
    user=(
        "MANY entities, relationships and claims were missed in the last extraction. Answer with only the "
        "missed ones, in the same JSON format; do not repeat those already given. Relationships may involve "
        "entities given before. If nothing was missed, answer with empty lists."
    ),
)
SUMMARIZE_DESCRIPTIONS = Prompt(
    name="summarize_descriptions",
    version="summarize_descriptions-v1",
    system="You merge descriptions of one entity or relationship into a single comprehensive description.",
    user=(
        "Given one or more entities and a list of descriptions, all related to the same entity or group of "
        "entities, write a single, comprehensive description that includes the information of every "
        "description. If the descriptions contradict each other, resolve the contradiction into one "
        "coherent description. Write in the third person and name the entities. Use at most {max_words} "
        "words.\n\n"
        "Entities: {names}\n"
        "Descriptions:\n{descriptions}\n\n"
        'Answer as JSON: {{"summary": "..."}}'
    ),
)
PROMPTS.update({p.name: p for p in (EXTRACT_GRAPH, EXTRACT_GRAPH_GLEAN, SUMMARIZE_DESCRIPTIONS)})


# ---- global search (pipeline.query.global_search): map over report batches, then reduce ----
GLOBAL_MAP = Prompt(
    name="global_map",
    version="global_map-v1",
    system=(
        "You answer a question using only the community report excerpts supplied. Each excerpt starts with "
        "a label [Community ID: <id> | summary part <n>]. Cite the community ids you used as "
        "[Community ID: <id>]. Rate usefulness from 0 to 100: how useful your answer is for the question "
        "(not your confidence). If the excerpts contain nothing relevant, answer with an empty string and "
        "usefulness 0."
    ),
    user=(
        "Question: {question}\n\n"
        "Community report excerpts:\n{context}\n\n"
        'Answer as JSON: {{"answer": "...", "usefulness": 0}}'
    ),
)
GLOBAL_REDUCE = Prompt(
    name="global_reduce",
    version="global_reduce-v1",
    system=(
        "You combine analysts' partial answers into one answer to the question. Each partial answer is "
        "labeled [Usefulness: <score>; Community IDs: <ids>]; prefer the more useful ones. Use only what the "
        "partial answers say, and cite the community ids that support each point as [Communities: <ids>]."
    ),
    user=('Question: {question}\n\nPartial answers:\n{context}\n\nAnswer as JSON: {{"answer": "..."}}'),
)
PROMPTS.update({p.name: p for p in (GLOBAL_MAP, GLOBAL_REDUCE)})


# ---- community reports (pipeline.ops.reports) ----------------------------------------------------------
# GraphRAG's community_report_graph prompt in short: the same report structure, JSON by schema.
COMMUNITY_REPORT = Prompt(
    name="community_report",
    version="community_report-v1",
    system=(
        "You help an analyst understand a community of entities in a knowledge graph. You write a report "
        "about the community using only the data given: its entities, the claims about them, their "
        "relationships and, for large communities, reports on its sub-communities."
    ),
    user=(
        "Write a report about the community described by the data below.\n\n"
        "- title: a short, specific name for the community that names its key entities.\n"
        "- summary: an executive summary of the community's structure, how its entities relate to each "
        "other, and the most significant information about them.\n"
        "- findings: 5 to 10 key insights, each a one-line `summary` and an `explanation` of a few "
        "sentences grounded in the data.\n"
        "- rating: a number from 0 to 10 for how important the community is.\n"
        "- rating_explanation: one sentence explaining the rating.\n\n"
        "Do not invent facts the data does not support. Use at most {max_words} words in total.\n\n"
        "Data:\n{context}\n\n"
        'Answer as JSON: {{"title": "...", "summary": "...", "findings": [{{"summary": "...", '
        '"explanation": "..."}}], "rating": 5.0, "rating_explanation": "..."}}'
    ),
)
PROMPTS[COMMUNITY_REPORT.name] = COMMUNITY_REPORT


# ---- local search (pipeline.query.local_search) ----
LOCAL_QUERY_INTENT = Prompt(
    name="local_query_intent",
    version="local_query_intent-v1",
    system="You analyse a question for a search engine over a knowledge graph.",
    user=(
        "List the named entities the question is about, other significant keywords, and the broader themes it "
        "touches.\n\nQuestion: {question}\n\n"
        'Answer as JSON: {{"entities": ["..."], "keywords": ["..."], "themes": ["..."]}}'
    ),
)
LOCAL_SELECT_COMMUNITIES = Prompt(
    name="local_select_communities",
    version="local_select_communities-v1",
    system=(
        "You choose which community summaries of a knowledge graph are relevant to a question. Select only "
        "communities whose summary helps answer it."
    ),
    user=(
        "Question: {question}\n\nCandidate communities (id: summary):\n{candidates}\n\n"
        'Answer as JSON: {{"selected_community_ids": [1, 2]}}'
    ),
)
LOCAL_ANSWER = Prompt(
    name="local_answer",
    version="local_answer-v1",
    system=(
        "You answer a question from a knowledge graph's context. [Community summaries] give topic-level "
        "background; [Evidence] items are source passages and claims, each with an id like [E3]. State facts "
        "only from the evidence and cite the evidence ids you used, like [E3]. If the context does not answer "
        "the question, say so."
    ),
    user="Question: {question}\n\n[Community summaries]\n{summaries}\n\n[Evidence]\n{evidence}",
)
PROMPTS.update({p.name: p for p in (LOCAL_QUERY_INTENT, LOCAL_SELECT_COMMUNITIES, LOCAL_ANSWER)})


# ---- vector query tool reranker (pipeline.vector_tool.rerank) ----
RELEVANCE_SCORE = Prompt(
    name="relevance_score",
    version="relevance_score-v1",
    system=(
        "You rate how relevant a passage is to a search query: 1 when it answers the query directly, 0 when "
        "it is unrelated, values in between for partial relevance."
    ),
    user='Query: {query}\n\nPassage:\n{text}\n\nAnswer as JSON: {{"score": 0.0}}',
)
PROMPTS[RELEVANCE_SCORE.name] = RELEVANCE_SCORE
