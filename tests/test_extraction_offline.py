"""Offline (rule-based) extraction on handcrafted text: entities, types, co-occurrences, claims, offsets."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from pipeline.core.schema import EXTRACTED_GRAPH_SCHEMA
from pipeline.ops.extraction import GENERIC_TYPE, from_table, table_counts, to_table
from pipeline.ops.extraction.offline import extract_unit
from pipeline.ops.extraction.text import find_dates, split_sentences
from pipeline.ops.incremental import reuse_extractions, tag_extraction_config

PARAGRAPH = (
    "Marie Curie was born in Warsaw in November 1867. She studied physics at the University of Paris. "
    "In 1895 Marie Curie married Pierre Curie, a French physicist. "
    "Pierre Curie said that the Academy of Sciences had ignored her work. "
    "The Nobel Committee reportedly wanted to honour only Pierre Curie and Henri Becquerel in 1903. "
    "Mr. Becquerel shared the Nobel Prize with the Curies."
)
OFFSET = 1000  # where the unit starts in its document


def _extract(text: str = PARAGRAPH, **kwargs):
    return extract_unit(text, text_unit_id="unit-1", document_id="doc-1", start_char=OFFSET, **kwargs)


def test_entities_and_their_types():
    types = {e.name: e.type for e in _extract().entities}
    assert types["Marie Curie"] == "person"  # 'born' follows the name
    assert types["Pierre Curie"] == "person"  # 'said' follows the name
    assert types["Mr. Becquerel"] == "person"  # honorific
    assert types["Warsaw"] == "geo"  # gazetteer / 'in X'
    assert types["University of Paris"] == "organization"  # head word before 'of'
    assert types["Academy of Sciences"] == "organization"
    assert types["Nobel Committee"] == "organization"
    assert types["Henri Becquerel"] == "person"  # a common given name opens it
    assert types["Nobel Prize"] == GENERIC_TYPE  # no rule applies
    # sentence-initial function words and pronouns are not names
    assert not {"She", "In", "The"} & set(types)


def test_entity_descriptions_are_its_sentences_with_document_offsets():
    marie = next(e for e in _extract().entities if e.name == "Marie Curie")
    assert marie.mentions == 2
    assert marie.description.startswith("Marie Curie was born in Warsaw in November 1867.")
    assert "married Pierre Curie" in marie.description
    for start in marie.evidence:  # evidence = sentence starts in the document
        assert PARAGRAPH[start - OFFSET :].startswith(("Marie Curie was", "In 1895 Marie"))


def test_relationships_are_same_sentence_cooccurrences_counted_per_sentence():
    rels = {frozenset((r.source, r.target)): r for r in _extract().relationships}
    assert frozenset(("Marie Curie", "Warsaw")) in rels
    assert frozenset(("Marie Curie", "Pierre Curie")) in rels
    assert frozenset(("Pierre Curie", "Henri Becquerel")) in rels
    # never in one sentence together
    assert frozenset(("Warsaw", "Academy of Sciences")) not in rels
    married = rels[frozenset(("Marie Curie", "Pierre Curie"))]
    assert married.strength == 1.0 and married.description.startswith("In 1895 Marie Curie married")


def test_cooccurrence_window_zero_links_the_whole_unit():
    rels = {frozenset((r.source, r.target)) for r in _extract(window=0).relationships}
    assert frozenset(("Warsaw", "Academy of Sciences")) in rels


def test_claims_are_sentences_about_an_entity():
    claims = {(c.subject, c.claim_type): c for c in _extract().claims}
    born = claims[("Marie Curie", "BIRTH")]
    assert born.object == "Warsaw" and born.status == "TRUE"
    assert (born.start_date, born.end_date) == ("1867-11", "1867-11")
    assert PARAGRAPH[born.start_char - OFFSET : born.end_char - OFFSET] == born.source_text
    married = claims[("Marie Curie", "MARRIAGE")]
    assert married.object == "Pierre Curie" and married.start_date == "1895"
    hedged = claims[("Nobel Committee", "STATEMENT")]
    assert hedged.status == "SUSPECTED" and hedged.object == "Pierre Curie"
    # 'She studied ...' has no entity as subject
    assert not any(c.description.startswith("She") for c in claims.values())


def test_claims_can_be_switched_off():
    assert _extract(claims=False).claims == []


def test_configured_types_limit_the_typing_rules():
    types = {e.name: e.type for e in _extract(entity_types=("person",)).entities}
    assert types["Marie Curie"] == "person"
    assert types["Warsaw"] == GENERIC_TYPE and types["University of Paris"] == GENERIC_TYPE


def test_deterministic_and_round_trips_through_the_table():
    first, second = _extract(), _extract()
    assert first == second
    assert from_table(to_table([first])) == [first]


def test_the_extraction_counts_are_read_off_the_tables_columns():
    first = _extract()
    units = [
        first,
        replace(
            first, text_unit_id="unit-2", status="partial", rounds=3, dropped_records=2, retyped_entities=1
        ),
        replace(first, text_unit_id="unit-3", status="failed", entities=[], relationships=[], claims=[]),
    ]
    assert first.entities and first.relationships and first.claims
    assert table_counts(to_table(units)) == {
        "text_units": 3,
        "entity_mentions": 2 * len(first.entities),
        "relationship_mentions": 2 * len(first.relationships),
        "claims": 2 * len(first.claims),
        "failed_text_units": 1,
        "partial_text_units": 1,
        "gleaning_rounds_used": 2,
        "dropped_records": 2,
        "retyped_entities": 1,
    }


def test_a_read_without_the_graph_columns_decodes_the_claims_alone():
    unit = _extract()
    table = to_table([unit]).drop_columns(["entities", "relationships"])
    (decoded,) = from_table(table)
    assert decoded.claims == unit.claims and unit.claims
    assert decoded.entities == [] and decoded.relationships == []


def test_possessives_honorifics_and_headings():
    text = (
        "STAVE ONE. MARLEY'S GHOST\n\n"
        "Scrooge's nephew visited Mr. Fezziwig. 'Bah,' said Scrooge. Scrooge knew Marley was dead."
    )
    names = {e.name for e in _extract(text).entities}
    assert {"Scrooge", "Mr. Fezziwig", "Marley"} <= names
    assert not {"STAVE ONE", "MARLEY", "Bah", "Scrooge's"} & names  # all-caps headings are skipped


def test_sentence_splitting_keeps_abbreviations_and_offsets():
    text = "Mr. T. Smith met Dr. Jones in the U.S. on Monday. They talked.\n\nA new paragraph"
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == [
        "Mr. T. Smith met Dr. Jones in the U.S. on Monday.",
        "They talked.",
        "A new paragraph",
    ]
    assert all(text[s.start : s.end] == s.text for s in sentences)


def test_dates_are_iso_at_the_stated_precision():
    assert find_dates("Born 12 March 1901, died in May 1950; active in the 1940s.") == [
        "1901-03-12",
        "1950-05",
        "1940",
    ]


def test_a_reindex_takes_the_stored_rows_of_unchanged_units_under_the_same_config():
    first = _extract()
    second = replace(first, text_unit_id="unit-2")
    failed = replace(first, text_unit_id="unit-3", status="failed")
    previous = tag_extraction_config(to_table([first, second, failed]), "config-1")
    rows = reuse_extractions(previous, "config-1", ["unit-2", "unit-3", "unit-9"])
    assert from_table(rows) == [second]  # a failed unit is extracted again
    assert rows.schema.names == EXTRACTED_GRAPH_SCHEMA.names
    assert reuse_extractions(previous, "config-2", ["unit-2"]) is None
    # A table written before two columns were added is brought to today's columns.
    old = previous.drop_columns(["dropped_records", "retyped_entities"])
    rows = reuse_extractions(old, "config-1", ["unit-1"])
    assert rows.schema.names == EXTRACTED_GRAPH_SCHEMA.names and from_table(rows) == [first]
    # ... and one written before a record field was added ('inferred' of an entity) to today's records.
    entity = EXTRACTED_GRAPH_SCHEMA.field("entities").type.value_type
    older = pa.struct([f for f in entity if f.name != "inferred"])
    index = previous.schema.get_field_index("entities")
    old = previous.set_column(
        index, pa.field("entities", pa.list_(older)), previous.column("entities").cast(pa.list_(older))
    )
    rows = reuse_extractions(old, "config-1", ["unit-1"])
    assert rows.schema.equals(EXTRACTED_GRAPH_SCHEMA, check_metadata=False) and from_table(rows) == [first]
