"""Every prompt the pipeline sends to a model, in one place.

Each prompt carries a version string that is part of the LLM cache key: change a prompt's wording and
bump its version, and every call that used it is asked again (and only those). The JSON shape of a
task's answer is not written here: the client appends the task's pydantic schema to the system prompt.

To add a task's prompt: define a `Prompt` below with a fresh `<name>-v1` version and register it in
`PROMPTS`. Templates use `str.format` fields; write literal braces as `{{` and `}}`.
"""

from __future__ import annotations

import json
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
# GraphRAG's extraction prompt, asking for JSON instead of delimited tuples, with claims in the same call,
# and one worked example (entities, relationships, claims) as GraphRAG's prompts carry.
EXTRACT_GRAPH = Prompt(
    name="extract_graph",
    version="extract_graph-v2",
    system=(
        "You extract a knowledge graph from text: entities, the relationships between them, and claims. "
        "Use only what the text says."
    ),
    user=(
        "-Goal-\n"
        "Given a text and a list of entity types, identify all entities of those types in the text, all "
        "relationships among the identified entities, and the claims the text makes about them.\n\n"
        "-Steps-\n"
        "1. Identify all entities. For each: `name` (capitalised as in the text), `type` (exactly one of: "
        "{entity_types}), `description` (a comprehensive description of the entity's attributes and "
        "activities).\n"
        "2. Among the entities of step 1, identify every pair that is clearly related. For each: `source` "
        "and `target` (names exactly as in step 1), `description` (why they are related) and `strength` "
        "(an integer from 1, weak, to 10, strong).\n"
        "3. {claim_instruction}\n\n"
        "-Example-\n{example}\n\n"
        "-Real data-\n"
        "Entity types: {entity_types}\n"
        "Text:\n{input_text}\n\n"
        "Answer as JSON with all three lists (a list is empty when the text has none): "
        '{{"entities": [entity objects], "relationships": [relationship objects], "claims": [claim objects]}}'
    ),
)
EXTRACT_GRAPH_CLAIMS = (
    "Claims: {claim_description} For each claim about an entity of step 1: `subject` (entity name), "
    "`object` (another entity name, or null), `claim_type` (a short upper-case category), `status` (TRUE "
    "when the text confirms it, FALSE when the text refutes it, SUSPECTED when it is alleged or unverified), "
    "`start_date` and `end_date` (ISO-8601, the same date twice for a single date, or null when the text "
    "gives none), `description` (the claim and its evidence) and `source_text` (a verbatim quote from the "
    "text)."
)
EXTRACT_GRAPH_NO_CLAIMS = "Claims are not needed: answer with an empty `claims` list."
_EXAMPLE_TEXT = (
    "Marta Quinlan of the Harlow Civic League led the Unity March through Harlow on 12 March 2023. She "
    "said the league had raised 40,000 pounds for the city's food bank; critics called the figure inflated."
)
_EXAMPLE_ANSWER: dict[str, list[dict[str, Any]]] = {
    "entities": [
        {
            "name": "Marta Quinlan",
            "type": "person",
            "description": "Leader of the Unity March, speaks for the Harlow Civic League.",
        },
        {
            "name": "Harlow Civic League",
            "type": "organization",
            "description": "A civic group that says it raised 40,000 pounds for Harlow's food bank.",
        },
        {"name": "Unity March", "type": "event", "description": "A march through Harlow on 12 March 2023."},
        {"name": "Harlow", "type": "geo", "description": "The city the Unity March went through."},
    ],
    "relationships": [
        {
            "source": "Marta Quinlan",
            "target": "Unity March",
            "description": "She led the march.",
            "strength": 9,
        },
        {
            "source": "Marta Quinlan",
            "target": "Harlow Civic League",
            "description": "She belongs to the league and speaks for it.",
            "strength": 8,
        },
        {
            "source": "Unity March",
            "target": "Harlow",
            "description": "The march went through Harlow.",
            "strength": 6,
        },
    ],
    "claims": [
        {
            "subject": "Unity March",
            "object": "Harlow",
            "claim_type": "EVENT",
            "status": "TRUE",
            "start_date": "2023-03-12",
            "end_date": "2023-03-12",
            "description": "The Unity March went through Harlow on 12 March 2023.",
            "source_text": "led the Unity March through Harlow on 12 March 2023",
        },
        {
            "subject": "Harlow Civic League",
            "object": None,
            "claim_type": "FUNDRAISING",
            "status": "SUSPECTED",
            "start_date": None,
            "end_date": None,
            "description": "The league says it raised 40,000 pounds for the food bank; critics dispute it.",
            "source_text": "the league had raised 40,000 pounds for the city's food bank",
        },
    ],
}


def extraction_example(*, claims: bool) -> str:
    """The worked example of EXTRACT_GRAPH (its claims only when claims are asked for)."""
    answer = {**_EXAMPLE_ANSWER, "claims": _EXAMPLE_ANSWER["claims"] if claims else []}
    return (
        "Entity types: organization, person, geo, event\n"
        f"Text:\n{_EXAMPLE_TEXT}\n"
        f"Answer:\n{json.dumps(answer, ensure_ascii=False)}"
    )


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


# ---- global search (pipeline.query.global_.search): map over report batches, then reduce ----
# Microsoft GraphRAG's map: a list of points, each scored on its own, so the reduce can keep the best
# points of every batch rather than whole batches.
GLOBAL_MAP = Prompt(
    name="global_map",
    version="global_map-v2",
    system=(
        "You are an analyst answering a question from community reports of a knowledge graph. The reports "
        "are given as excerpts, each starting with a label [Community ID: <id> | summary part <n>].\n"
        "Answer with a list of points. Each point has:\n"
        "- description: one statement that helps answer the question, using only what the excerpts say;\n"
        "- score: a number from 0 to 100 for how important the point is for answering the question (not "
        "how sure you are);\n"
        "- communities: the ids of the communities whose excerpts support the point.\n"
        "Do not invent facts and do not list a point the excerpts do not support. If the excerpts hold "
        "nothing relevant to the question, answer with an empty list of points.\n\n"
        "Worked example. Question: Who pays for the observatory? Excerpts: [Community ID: 12 | summary part "
        "1] says the town council funds the observatory's upkeep; [Community ID: 40 | summary part 1] is "
        "about a rowing club. Answer: one point, description \"The town council funds the observatory's "
        'upkeep.", a high score because it answers the question directly, communities [12]; nothing from '
        "community 40, which is unrelated."
    ),
    user=(
        "Question: {question}\n\n"
        "Community report excerpts:\n{context}\n\n"
        'Answer as JSON: {{"points": [{{"description": "...", "score": <0-100>, "communities": [<ids>]}}]}}'
    ),
)
GLOBAL_REDUCE = Prompt(
    name="global_reduce",
    version="global_reduce-v2",
    system=(
        "You write the final answer to a question from the points that analysts found in community reports "
        "of a knowledge graph. Each point is labeled [Score: <0-100>; Community IDs: <ids>]; the points are "
        "listed most important first. Use only what the points say: merge points that overlap, leave out "
        "those that do not help answer the question, and add no facts of your own. Cite the community ids "
        'that support each statement as [Communities: <ids>], at most 5 ids in one citation (add "+more" '
        "when there are more). If the points do not answer the question, say so plainly rather than guess."
    ),
    user=(
        "Question: {question}\n\n"
        "Response length and format: {response_type}, in markdown.\n\n"
        "Partial answers:\n{context}\n\n"
        'Answer as JSON: {{"answer": "..."}}'
    ),
)
# Dynamic community selection (pipeline.query.global_.selection): Microsoft GraphRAG's rating prompt in
# short, several reports per call.
GLOBAL_RATE = Prompt(
    name="global_rate",
    version="global_rate-v1",
    system=(
        "You judge whether community reports of a knowledge graph are relevant to a question. Rate each "
        "report from 0 to 10: 0 when it has nothing to do with the question, 5 when it holds part of an "
        "answer or context a good answer needs, 10 when it answers the question directly. For a broad "
        "question about the whole collection (its main themes or topics), a report about a substantial "
        "theme is relevant."
    ),
    user=(
        "Question: {question}\n\n"
        "Reports (id: title — summary):\n{reports}\n\n"
        "Rate every report above, once each, by its id.\n"
        'Answer as JSON: {{"ratings": [{{"community": <id>, "score": <0-10>}}]}}'
    ),
)
PROMPTS.update({p.name: p for p in (GLOBAL_MAP, GLOBAL_REDUCE, GLOBAL_RATE)})


# ---- community reports (pipeline.ops.reports) ----------------------------------------------------------
# GraphRAG's community_report_graph prompt in short: the same report structure, JSON by schema.
# The worked example's ids refer to its own rows: the model sees how a citation is read off a table,
# and a copied id that the real context lacks is removed by pipeline.ops.reports.citations.
_REPORT_EXAMPLE = (
    "-----Entities-----\n"
    "id|entity|type|description|degree\n"
    "1|Kestrel Observatory|organization|A hilltop observatory that runs public star nights.|3\n"
    "2|Town Council|organization|The town's elected council; it funds the observatory's upkeep.|1\n"
    "3|Ines Varga|person|The observatory's director, who founded its star nights.|1\n\n"
    "-----Relationships-----\n"
    "id|source|target|description|weight|combined_degree\n"
    "1|Town Council|Kestrel Observatory|The Town Council pays for the observatory's upkeep.|9|4\n"
    "2|Ines Varga|Kestrel Observatory|Ines Varga directs the observatory.|8|4\n\n"
    "One finding written from these rows:\n"
    '{{"summary": "The Town Council keeps Kestrel Observatory running", "explanation": "Kestrel '
    "Observatory depends on public money: the Town Council funds its upkeep [Data: Entities (1, 2); "
    "Relationships (1)], and its director Ines Varga runs its star nights [Data: Entities (3); "
    'Relationships (2)]."}}'
)
COMMUNITY_REPORT = Prompt(
    name="community_report",
    version="community_report-v2",
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
        "Every row of the data starts with its id. Cite the rows each statement rests on, at the end of "
        "the statement, as [Data: <table> (<ids>); <table> (<ids>)] with the tables named Entities, "
        "Relationships, Claims and Reports (the sub-community reports). List at most 5 ids in one "
        'reference; when there are more, list the 5 most relevant and add "+more". Cite only ids that '
        "appear in the data below.\n\n"
        "Do not invent facts the data does not support. Use at most {max_words} words in total.\n\n"
        "-Example-\n" + _REPORT_EXAMPLE + "\n\n"
        "-Real data-\n{context}\n\n"
        'Answer as JSON: {{"title": "...", "summary": "...", "findings": [{{"summary": "...", '
        '"explanation": "... [Data: ...]"}}], "rating": <0-10>, "rating_explanation": "..."}}'
    ),
)
PROMPTS[COMMUNITY_REPORT.name] = COMMUNITY_REPORT


# ---- local search (pipeline.query.local.search) ----
LOCAL_QUERY_INTENT = Prompt(
    name="local_query_intent",
    version="local_query_intent-v2",
    system="You analyse a question for a search engine over a knowledge graph.",
    user=(
        "List the named entities the question is about, other significant keywords, and the broader themes it "
        "touches. Give all three lists; a list is empty when the question has none of that kind.\n\n"
        "Question: {question}\n\n"
        'Answer as JSON: {{"entities": [names], "keywords": [words or phrases], "themes": [topics]}}'
    ),
)
LOCAL_SELECT_COMMUNITIES = Prompt(
    name="local_select_communities",
    version="local_select_communities-v2",
    system=(
        "You choose which community summaries of a knowledge graph are relevant to a question. Select only "
        "communities whose summary helps answer it."
    ),
    user=(
        "Question: {question}\n\nCandidate communities (id: summary):\n{candidates}\n\n"
        'Answer as JSON: {{"selected_community_ids": [the ids of the relevant candidates above]}}'
    ),
)
LOCAL_ANSWER = Prompt(
    name="local_answer",
    version="local_answer-v2",
    system=(
        "You answer a question from data tables of a knowledge graph built from documents. The data has up "
        "to five sections, each a table whose first column is the row's id: Reports (summaries of "
        "communities of entities), Entities, Relationships, Claims, and Sources (passages of the "
        "documents).\n"
        "Use only facts from these tables. If they do not answer the question, say so; do not make "
        "anything up.\n"
        "Support each statement with the rows it comes from, by section and id, in this form:\n"
        "[Data: Entities (id, id); Relationships (id); Sources (id, id)]\n"
        "For example, a statement drawn from entity rows 5 and 7, relationship row 23 and source row 2 of "
        "the data ends with [Data: Entities (5, 7); Relationships (23); Sources (2)]. Cite only ids that "
        'appear in the tables below, at most five per section (add "+more" when there are more), and '
        "only the sections you used."
    ),
    user="Question: {question}\n\nData tables:\n{context}",
)
PROMPTS.update({p.name: p for p in (LOCAL_QUERY_INTENT, LOCAL_SELECT_COMMUNITIES, LOCAL_ANSWER)})


# ---- vector query tool reranker (pipeline.vector_tool.rerank) ----
RELEVANCE_SCORE = Prompt(
    name="relevance_score",
    version="relevance_score-v2",
    system=(
        "You rate how relevant a passage is to a search query: 1 when it answers the query directly, 0 when "
        "it is unrelated, values in between for partial relevance."
    ),
    user='Query: {query}\n\nPassage:\n{text}\n\nAnswer as JSON: {{"score": <a number from 0 to 1>}}',
)
PROMPTS[RELEVANCE_SCORE.name] = RELEVANCE_SCORE


# ---- DRIFT search (pipeline.query.drift.search): primer, follow-ups, reduce ----
# Microsoft GraphRAG's DRIFT prompts in short: each step answers, scores its answer against the overall
# question and proposes follow-up questions that a local search can answer.
_DRIFT_STEP_FIELDS = (
    "Answer as JSON with three fields:\n"
    "- answer: your intermediate answer, using only the data, each statement followed by the rows it comes "
    "from as [Data: <section> (<ids>)];\n"
    "- score: a number from 0 to 100 for how well your answer answers the overall question;\n"
    "- follow_up_queries: at most {max_follow_ups} questions about specific named entities of the data "
    "whose answers would complete yours; none when your answer is complete."
)
DRIFT_PRIMER = Prompt(
    name="drift_primer",
    version="drift_primer-v1",
    system=(
        "You are an analyst starting a search over a knowledge graph built from documents. You get a "
        "question and the community reports closest to it, each a row of the Reports table whose first "
        "column is the community id. Use only what the reports say; do not make anything up."
    ),
    user=(
        "Overall question: {question}\n\n"
        "-----Reports-----\nid|title|content\n{reports}\n\n" + _DRIFT_STEP_FIELDS + "\n"
        "Cite reports as [Data: Reports (<ids>)].\n"
        'JSON: {{"answer": "...", "score": <0-100>, "follow_up_queries": ["..."]}}'
    ),
)
DRIFT_FOLLOW_UP = Prompt(
    name="drift_follow_up",
    version="drift_follow_up-v1",
    system=LOCAL_ANSWER.system,
    user=(
        "Overall question: {question}\n"
        "Follow-up question (answer this one, for the overall question): {follow_up}\n\n"
        "Data tables:\n{context}\n\n" + _DRIFT_STEP_FIELDS + "\n"
        'JSON: {{"answer": "...", "score": <0-100>, "follow_up_queries": ["..."]}}'
    ),
)
DRIFT_REDUCE = Prompt(
    name="drift_reduce",
    version="drift_reduce-v1",
    system=(
        "You write the final answer to a question from the intermediate answers of a search over a "
        "knowledge graph. Each intermediate answer is labeled with the question it answered and its score "
        "(0-100, how well it answers the overall question); they are listed best first. Use only what they "
        "say: merge what overlaps, leave out what does not help, and add no facts of your own. Keep their "
        "[Data: ...] citations exactly as written after the statements they support. If they do not "
        "answer the question, say so plainly rather than guess."
    ),
    user=(
        "Question: {question}\n\n"
        "Response length and format: {response_type}, in markdown.\n\n"
        "Intermediate answers:\n{context}"
    ),
)
PROMPTS.update({p.name: p for p in (DRIFT_PRIMER, DRIFT_FOLLOW_UP, DRIFT_REDUCE)})


# ---- basic search (pipeline.query.basic.search): vector RAG over text units ----
BASIC_ANSWER = Prompt(
    name="basic_answer",
    version="basic_answer-v1",
    system=(
        "You answer a question from passages of documents, given as the Sources table whose first column "
        "is the passage's id. Use only facts from these passages. If they do not answer the question, say "
        "so; do not make anything up.\n"
        "Support each statement with the passages it comes from, as [Data: Sources (id, id)], at most five "
        'ids per citation (add "+more" when there are more). Cite only ids that appear in the table.'
    ),
    user="Question: {question}\n\nData tables:\n{context}",
)
PROMPTS[BASIC_ANSWER.name] = BASIC_ANSWER


# ---- lazy search (pipeline.query.lazy) and the router (pipeline.query.auto) ----
# LazyGraphRAG's query expansion and relevance test (Microsoft Research, November 2024) in short; the
# answer is basic search's (BASIC_ANSWER), over the relevant units' extracted sentences.
LAZY_EXPAND = Prompt(
    name="lazy_expand",
    version="lazy_expand-v1",
    system=(
        "You break a question into the few sub-questions a search over passages of documents must answer "
        "to answer it. Each sub-question stands alone (names what it is about, no pronouns)."
    ),
    user=(
        "Question: {question}\n\nWrite at most {n} sub-questions; the first is the question itself, "
        "reworded only if that makes it searchable.\n"
        'Answer as JSON: {{"subqueries": ["...", "..."]}}'
    ),
)
LAZY_RATE = Prompt(
    name="lazy_rate",
    version="lazy_rate-v1",
    system=(
        "You judge whether passages of documents are relevant to a question. Rate each passage from 0 to "
        "10: 0 when it has nothing to do with the question, 5 when it holds part of an answer or context "
        "a good answer needs, 10 when it answers the question directly."
    ),
    user=(
        "Question: {question}\n\nPassages (id: text):\n{passages}\n\n"
        "Rate every passage above, once each, by its id.\n"
        'Answer as JSON: {{"ratings": [{{"id": <id>, "score": <0-10>}}]}}'
    ),
)
ROUTE_QUESTION = Prompt(
    name="route_question",
    version="route_question-v1",
    system=(
        "You choose how a question over a collection of documents is best answered:\n"
        "- basic: a fact stated in one or two passages (who, when, where, which, how many);\n"
        "- local: how specific named people, places or things relate, from the knowledge graph;\n"
        "- global: a summary or the main themes of the whole collection or a whole document;\n"
        "- drift: a broad question that also needs details, or writing something new from the material;\n"
        "- lazy: a question that needs reasoning over facts spread across several passages."
    ),
    user='Question: {question}\n\nAnswer as JSON: {{"route": "<basic|local|global|drift|lazy>", "reason": "..."}}',
)
PROMPTS.update({p.name: p for p in (LAZY_EXPAND, LAZY_RATE, ROUTE_QUESTION)})
