"""The prompts of indexing: the example task, graph extraction, description summaries, community reports."""

from __future__ import annotations

import json
from typing import Any

from pipeline.prompts.base import Prompt

SUMMARIZE = Prompt(
    name="summarize",
    revision=1,
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


# ---- graph extraction (pipeline.ops.extraction.llm) and description summaries (pipeline.ops.descriptions) ----
# GraphRAG's extraction prompt, asking for JSON instead of delimited tuples, with claims in the same call,
# and one worked example (entities, relationships, claims) as GraphRAG's prompts carry.
EXTRACT_GRAPH = Prompt(
    name="extract_graph",
    revision=2,
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
    revision=1,
    system="",
    user=(
        "MANY entities, relationships and claims were missed in the last extraction. Answer with only the "
        "missed ones, in the same JSON format; do not repeat those already given. Relationships may involve "
        "entities given before. If nothing was missed, answer with empty lists."
    ),
)
SUMMARIZE_DESCRIPTIONS = Prompt(
    name="summarize_descriptions",
    revision=1,
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
    revision=2,
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
