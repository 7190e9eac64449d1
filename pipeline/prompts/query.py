"""The prompts of query time: global, local, DRIFT and basic search, and the vector tool's reranker."""

from __future__ import annotations

from pipeline.prompts.base import Prompt

# ---- global search (pipeline.query.global_.search): map over report batches, then reduce ----
# Microsoft GraphRAG's map: a list of points, each scored on its own, so the reduce can keep the best
# points of every batch rather than whole batches.
GLOBAL_MAP = Prompt(
    name="global_map",
    revision=2,
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
    revision=3,
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
        "Partial answers:\n{context}"
    ),
)
# Dynamic community selection (pipeline.query.global_.selection): Microsoft GraphRAG's rating prompt in
# short, several reports per call.
GLOBAL_RATE = Prompt(
    name="global_rate",
    revision=1,
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


# ---- local search (pipeline.query.local.search) ----
LOCAL_QUERY_INTENT = Prompt(
    name="local_query_intent",
    revision=2,
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
    revision=2,
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
    revision=2,
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


# ---- vector query tool reranker (pipeline.vector_tool.rerank) ----
RELEVANCE_SCORE = Prompt(
    name="relevance_score",
    revision=2,
    system=(
        "You rate how relevant a passage is to a search query: 1 when it answers the query directly, 0 when "
        "it is unrelated, values in between for partial relevance."
    ),
    user='Query: {query}\n\nPassage:\n{text}\n\nAnswer as JSON: {{"score": <a number from 0 to 1>}}',
)


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
    revision=1,
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
    revision=1,
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
    revision=1,
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


# ---- basic search (pipeline.query.basic.search): vector RAG over text units ----
BASIC_ANSWER = Prompt(
    name="basic_answer",
    revision=1,
    system=(
        "You answer a question from passages of documents, given as the Sources table whose first column "
        "is the passage's id. Use only facts from these passages. If they do not answer the question, say "
        "so; do not make anything up.\n"
        "Support each statement with the passages it comes from, as [Data: Sources (id, id)], at most five "
        'ids per citation (add "+more" when there are more). Cite only ids that appear in the table.'
    ),
    user="Question: {question}\n\nData tables:\n{context}",
)


# ---- lazy search (pipeline.query.lazy) and the router (pipeline.query.auto) ----
# LazyGraphRAG's query expansion and relevance test (Microsoft Research, November 2024) in short; the
# answer is basic search's (BASIC_ANSWER), over the relevant units' extracted sentences.
LAZY_EXPAND = Prompt(
    name="lazy_expand",
    revision=1,
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
    revision=1,
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
# The routes are the routable modes' own lines (`pipeline.query.common.mode.RouteHint.when`), so a
# registered mode is one the model may choose (`pipeline.query.auto.route.route_messages`).
ROUTE_QUESTION = Prompt(
    name="route_question",
    revision=2,
    system="You choose how a question over a collection of documents is best answered, by one of the routes "
    "listed with it.",
    user='Routes:\n{routes}\n\nQuestion: {question}\n\nAnswer as JSON: {{"route": "<{names}>", "reason": "..."}}',
)
# ---- the OpenAI-compatible chat door (pipeline.service.chat_condense): a conversation's last question,
# rewritten to stand alone, since every mode answers one question without the turns before it.
CHAT_CONDENSE = Prompt(
    name="chat_condense",
    revision=1,
    system=(
        "You rewrite the last question of a conversation so that it can be understood without the "
        "conversation: replace pronouns and references to earlier turns with what they refer to, and "
        "keep everything else as asked. Do not answer the question. If it already stands alone, repeat "
        "it unchanged. Reply with the question alone, on one line."
    ),
    user="Conversation:\n{history}\n\nLast question: {question}\n\nStandalone question:",
)
