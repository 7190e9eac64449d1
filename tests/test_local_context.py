"""The local answer's context builder on the tiny hand-built graph: budget, shares, ranking, ids, citations."""

from __future__ import annotations

import pydantic
import pytest

from pipeline.core.tokens import count_tokens
from pipeline.query.answer.citations import resolve_citations
from pipeline.query.retrieval.intent import QueryIntent
from pipeline.query.retrieval.local_context import (
    ContextShares,
    answer_messages,
    build_local_context,
    prompt_tokens,
    rank_entities,
    rank_relationships,
)
from pipeline.query.retrieval.local_index import load_local_index
from tests.support.tiny_index import PARAGRAPHS, eid

QUESTION = "How is Scrooge related to Bob Cratchit?"


@pytest.fixture(scope="module")
def index(tiny):
    """The local index of conftest's tiny namespace."""
    return load_local_index(tiny)


def chunk(index, unit_id: str, text: str | None = None) -> dict:
    unit = index.text_units[unit_id]
    return {
        "id": unit_id,
        "kind": "chunk",
        "text": text if text is not None else unit["text"],
        "document_id": unit["document_id"],
        "document_title": "carol.txt",
        "start_char": unit["start_char"],
        "end_char": unit["end_char"],
    }


def communities(index, ids: list[int]) -> list[dict]:
    return [
        {
            "id": c,
            "level": index.communities[c]["level"],
            **{k: index.reports[c][k] for k in ("title", "summary")},
        }
        for c in ids
    ]


def build(index, budget: int, chunks: list[dict] | None = None, seeds=("scrooge", "cratchit"), **kw):
    units = sorted(index.text_units)
    return build_local_context(
        index,
        QUESTION,
        [eid(s) for s in seeds],
        communities(index, [2, 4]),
        chunks if chunks is not None else [chunk(index, u) for u in units],
        max_tokens=budget,
        **kw,
    )


def test_sections_come_in_order_as_tables_with_the_tables_own_ids(index):
    context, evidence = build(index, 12_000)
    text = context.text
    heads = [
        "-----Reports-----",
        "-----Entities-----",
        "-----Relationships-----",
        "-----Claims-----",
        "-----Sources-----",
    ]
    assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    assert "id|entity|type|description|number of relationships" in text
    entity_hrid = {e["id"]: e["human_readable_id"] for e in index.entities.values()}
    for row in context.of("entities"):
        assert row.id == entity_hrid[row.ref["entity_id"]]
        assert f"\n{row.id}|{index.entities[row.ref['entity_id']]['title']}|" in text
    rel_hrid = {r["id"]: r["human_readable_id"] for r in index.relationships.values()}
    assert all(row.id == rel_hrid[row.ref["relationship_id"]] for row in context.of("relationships"))
    for row in context.of("sources"):
        unit = index.text_units[row.ref["text_unit_id"]]
        assert row.id == unit["human_readable_id"] and row.ref["start_char"] == unit["start_char"]
    assert {r.id for r in context.of("reports")} == {2, 4}
    # Little material: everything fits, and the prompt is measured as sent.
    assert context.prompt_tokens == prompt_tokens(QUESTION, text, "o200k_base") < 12_000
    assert len(context.of("sources")) == len(PARAGRAPHS)
    assert [e["kind"] for e in evidence] == ["chunk"] * len(PARAGRAPHS) + ["claim"]
    assert evidence[-1]["ref"] == "Claims (0)" and evidence[0]["ref"].startswith("Sources (")


def test_matched_entities_come_first_then_by_weight_and_relationships_between_matched_ones_first(index):
    context, _ = build(index, 12_000)
    titles = [r.ref["title"] for r in context.of("entities")]
    assert titles[:2] == ["Ebenezer Scrooge", "Bob Cratchit"]
    assert titles[2:4] == ["Jacob Marley", "Tiny Tim"]  # edge weight 5 to Scrooge, then 4 to Cratchit
    pairs = [(r.ref["source"], r.ref["target"]) for r in context.of("relationships")]
    assert pairs[0] == ("Ebenezer Scrooge", "Bob Cratchit")  # both ends matched
    assert pairs[1:4] == [
        ("Ebenezer Scrooge", "Jacob Marley"),
        ("Bob Cratchit", "Tiny Tim"),
        ("Ebenezer Scrooge", "Fezziwig"),
    ]  # one end matched, by weight
    assert pairs[4:] == [("London", "Fezziwig")]


@pytest.mark.parametrize("seeds", [("scrooge", "cratchit"), ("tim",), ("london", "scrooge", "marley"), ()])
def test_relationships_come_in_tiers_of_matched_ends_then_inside_the_ranked_entities_then_by_weight(
    index, seeds
):
    # The lazy, tiered ranking must equal one sort by the rule's full key over every relationship the
    # ranked entities have.
    seed_ids = [eid(s) for s in seeds]
    entities = rank_entities(index, seed_ids, communities(index, sorted(index.communities)[:1]))
    inside, seed_set = set(entities), set(seed_ids)
    found = {r for e in entities for r in index.relationships_of.get(e, [])}

    def key(rid: str) -> tuple:
        r = index.relationships[rid]
        ends = (r["source_id"], r["target_id"])
        return (
            -sum(e in seed_set for e in ends),
            not all(e in inside for e in ends),
            -float(r.get("weight") or 0.0),
            -(r.get("combined_degree") or 0),
            rid,
        )

    assert list(rank_relationships(index, seed_ids, entities)) == sorted(found, key=key)
    assert found  # the tiny graph gives every case relationships to rank


def test_a_small_budget_holds_the_whole_prompt_and_keeps_the_best_ranked_rows(index):
    overhead = prompt_tokens(QUESTION, "", "o200k_base")
    budget = overhead + 160
    context, _ = build(index, budget)
    messages = answer_messages(QUESTION, context.text)
    assert count_tokens("\n".join(m["content"] for m in messages)) == context.prompt_tokens <= budget
    entities = [r.ref["title"] for r in context.of("entities")]
    assert entities and entities[0] == "Ebenezer Scrooge"


def test_the_context_fills_its_budget_when_there_is_material(index):
    units = sorted(index.text_units)
    # Many passages of ~60 tokens: more than the budget holds.
    many = [
        chunk(index, units[i % len(units)], PARAGRAPHS[i % len(PARAGRAPHS)] + f" Copy {i}.")
        for i in range(80)
    ]
    for i, c in enumerate(many):
        c["id"] = f"{c['id']}#{i}"  # ids of no text unit: the builder gives them fresh short ids
    for budget in (1_500, 3_000):
        context, _ = build(index, budget, chunks=many)
        assert 0.95 * budget <= context.prompt_tokens <= budget, (budget, context.prompt_tokens)
        assert sum(context.section_tokens.values()) <= budget


def test_a_row_too_large_for_its_share_is_skipped_not_a_stop(index):
    units = sorted(index.text_units)
    huge = chunk(index, units[0], " ".join(["Scrooge counted his money."] * 400))
    rest = [chunk(index, u) for u in units[1:]]
    context, evidence = build(index, 1_500, chunks=[huge, *rest])
    sources = {r.ref["text_unit_id"] for r in context.of("sources")}
    assert units[0] not in sources and sources == set(units[1:])
    assert context.prompt_tokens <= 1_500


def test_shares_are_validated():
    with pytest.raises(ValueError, match="shares"):
        ContextShares(sources=0.9)
    with pytest.raises(ValueError, match="shares"):
        ContextShares(claims=-0.1)


def test_citations_resolve_to_rows_and_unknown_ones_are_kept_apart(index):
    context, _ = build(index, 12_000)
    e = context.of("entities")[0]
    r = context.of("relationships")[0]
    s = context.of("sources")[0]
    answer = (
        f"Scrooge employs Cratchit [Data: Entities ({e.id}, 999, +more); Relationship ({r.id})]. "
        f"He pays him little [Data: Sources ({s.id}); Relationships ({r.id}); Claims (x)]."
    )
    cited, unresolved = resolve_citations(answer, context)
    assert [(c["section"], c["id"]) for c in cited] == [
        ("entities", e.id),
        ("relationships", r.id),
        ("sources", s.id),
    ]
    assert cited[0]["entity_id"] == e.ref["entity_id"]
    assert cited[2]["text_unit_id"] == s.ref["text_unit_id"] and cited[2]["document_id"]
    assert unresolved == ["Entities (999)", "Claims (x)"]


def test_query_intent_fields_are_required():
    with pytest.raises(pydantic.ValidationError, match="keywords"):
        QueryIntent.model_validate({"entities": ["Scrooge"], "themes": []})
    assert QueryIntent(entities=[], keywords=[], themes=[]).entities == []
