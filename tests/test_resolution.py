"""Entity resolution: what the documented rules merge, what they never merge, weights and ids."""

from __future__ import annotations

import pytest

from pipeline.core.names import entity_id, normalize_name
from pipeline.engine.offline import OfflineEngine
from pipeline.ops.claims import build_covariates
from pipeline.ops.extraction.models import GENERIC_TYPE, RawClaim, RawEntity, RawRelationship
from pipeline.ops.relationships import npmi
from pipeline.ops.resolution import ResolutionOptions, link_text_units, resolve_graph
from pipeline.settings import Settings
from tests.support.records import unit


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(storage_root=tmp_path)


def _by_title(graph) -> dict[tuple[str, str], dict]:
    return {(e["title"], e["type"]): e for e in graph.entities.to_pylist()}


def test_normalised_names_merge():
    assert normalize_name("The  Scrooge’s") == "scrooge"
    assert normalize_name("SCROOGE'S") == "scrooge"
    assert normalize_name("Wiley-Blackwell") == normalize_name("Wiley Blackwell") == "wiley blackwell"
    assert normalize_name("Café de Flore") == "cafe de flore"
    assert normalize_name("Mr. Fezziwig") == "mr fezziwig"


def test_case_punctuation_and_possessive_variants_become_one_entity_with_aliases(settings):
    units = [
        unit("u1", [("Ebenezer Scrooge", "person", "A miser.")]),
        unit("u2", [("EBENEZER SCROOGE", "person", "He changes.")]),
        unit("u3", [("Ebenezer Scrooge's", "person", "A miser.")]),
        unit("u4", [("Ebenezer Scrooge", "person", "")]),
    ]
    graph = resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine())
    rows = graph.entities.to_pylist()
    assert len(rows) == 1
    scrooge = rows[0]
    assert scrooge["title"] == "Ebenezer Scrooge"  # the most frequent surface form
    assert scrooge["aliases"] == ["EBENEZER SCROOGE", "Ebenezer Scrooge's"]
    assert scrooge["text_unit_ids"] == ["u1", "u2", "u3", "u4"] and scrooge["frequency"] == 4
    assert scrooge["id"] == entity_id("ebenezer scrooge", "person")
    # two distinct descriptions -> offline summary holds both sentences
    assert "A miser." in scrooge["description"] and "He changes." in scrooge["description"]


def test_same_name_with_different_types_stays_two_rows(settings):
    units = [
        unit("u1", [("Washington", "person", "The first president.")]),
        unit("u2", [("Washington", "geo", "A state.")]),
        unit("u3", [("WASHINGTON", "geo", "On the Pacific coast.")]),
    ]
    rows = _by_title(resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine()))
    # tie between surface forms -> the lexicographically first ("WASHINGTON") is the title
    assert set(rows) == {("Washington", "person"), ("WASHINGTON", "geo")}
    assert rows[("WASHINGTON", "geo")]["aliases"] == ["Washington"]
    assert len({r["id"] for r in rows.values()}) == 2
    person = next(r for (t, ty), r in rows.items() if ty == "person")
    assert person["text_unit_ids"] == ["u1"]


def test_unknown_type_joins_the_most_mentioned_typed_entity(settings):
    units = [
        unit("u1", [("Marley", GENERIC_TYPE, "Dead as a door-nail.")]),
        unit("u2", [("Marley", "person", "Scrooge's partner.")]),
        unit("u3", [("Marley", "person", "")]),
        unit("u4", [("Marley", "geo", "")]),
        unit("u5", [("Humbug", GENERIC_TYPE, "")]),
    ]
    graph = resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine())
    rows = _by_title(graph)
    assert rows[("Marley", "person")]["text_unit_ids"] == ["u1", "u2", "u3"]
    assert rows[("Marley", "geo")]["text_unit_ids"] == ["u4"]
    assert ("Humbug", GENERIC_TYPE) in rows  # never typed: stays unknown
    assert graph.stats.generic_mentions_typed == 1


def test_fuzzy_merge_needs_same_type_and_identical_numbers_and_honorifics(settings):
    units = [
        unit("u1", [("Ebenezer Scrooge", "person", "")]),
        unit("u2", [("Ebenezer Scrooge", "person", "")]),
        unit("u3", [("Ebeneezer Scrooge", "person", "")]),  # typo: merges into the more frequent
        unit("u4", [("Ebeneezer Scrooge", "organization", "")]),  # other type: never merged
        unit("u5", [("World War I", "event", "")]),
        unit("u6", [("World War II", "event", "")]),
        unit("u7", [("Mr Fezziwig", "person", "")]),
        unit("u8", [("Mrs Fezziwig", "person", "")]),
    ]
    graph = resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine())
    rows = _by_title(graph)
    scrooge = rows[("Ebenezer Scrooge", "person")]
    assert scrooge["aliases"] == ["Ebeneezer Scrooge"] and len(scrooge["text_unit_ids"]) == 3
    assert ("Ebeneezer Scrooge", "organization") in rows
    assert ("World War I", "event") in rows and ("World War II", "event") in rows
    assert ("Mr Fezziwig", "person") in rows and ("Mrs Fezziwig", "person") in rows
    assert graph.stats.fuzzy_merges == 1
    exact_only = resolve_graph(
        units,
        ResolutionOptions.from_settings(settings.with_overrides(resolution_fuzzy_threshold=100)),
        OfflineEngine(),
    )
    assert ("Ebeneezer Scrooge", "person") in _by_title(exact_only)


def test_relationships_merge_undirected_and_sum_strengths(settings):
    units = [
        unit(
            "u1",
            [("Scrooge", "person", ""), ("Marley", "person", "")],
            [("Scrooge", "Marley", "Partners.", 7)],
        ),
        unit(
            "u2",
            [("Marley", "person", ""), ("Scrooge", "person", "")],
            [("Marley", "Scrooge", "Haunts him.", 9)],
        ),
        unit(
            "u3", [("Scrooge", "person", ""), ("SCROOGE", "person", "")], [("Scrooge", "SCROOGE", "Self.", 5)]
        ),
    ]
    graph = resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine())
    rels = graph.relationships.to_pylist()
    assert len(rels) == 1
    rel = rels[0]
    assert rel["weight"] == 16.0 and rel["text_unit_ids"] == ["u1", "u2"]
    assert (rel["source"], rel["target"]) == ("Scrooge", "Marley")  # first-seen orientation
    ents = {e["title"]: e for e in graph.entities.to_pylist()}
    assert {rel["source_id"], rel["target_id"]} == {ents["Scrooge"]["id"], ents["Marley"]["id"]}
    assert ents["Scrooge"]["degree"] == 1 and rel["combined_degree"] == 2
    assert graph.stats.self_loops_dropped == 1


def test_inferred_endpoint_entities_fold_into_the_typed_entity(settings):
    units = [
        unit(
            "u1",
            [("Scrooge", "person", "A miser."), RawEntity("Fred", GENERIC_TYPE, "", inferred=True)],
            [("Scrooge", "Fred", "Uncle.", 5)],
        ),
        unit("u2", [("Fred", "person", "The nephew.")]),
    ]
    graph = resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine())
    rows = _by_title(graph)
    assert set(rows) == {("Scrooge", "person"), ("Fred", "person")}
    assert rows[("Fred", "person")]["text_unit_ids"] == ["u1", "u2"]
    assert graph.relationships.num_rows == 1


def test_offline_weights_count_each_sentence_once_and_low_npmi_single_edges_are_pruned(settings):
    # u1 and u2 overlap: the same sentence (document offset 10) appears in both
    a = RawEntity("Alpha", "person", "", evidence=[10, 50, 90, 130])
    b = RawEntity("Beta", "person", "", evidence=[10])
    c = RawEntity("Gamma", "person", "", evidence=[200, 240, 280, 320])
    units = [
        unit(
            "u1",
            [a, b],
            [RawRelationship("Alpha", "Beta", "A and B.", 1.0, evidence=[10])],
            method="offline",
            n_sentences=10,
        ),
        unit(
            "u2",
            [a, b],
            [RawRelationship("Alpha", "Beta", "A and B.", 1.0, evidence=[10])],
            method="offline",
            n_sentences=10,
        ),
        unit(
            "u3",
            [a, c],
            [RawRelationship("Alpha", "Gamma", "A and G.", 1.0, evidence=[90])],
            method="offline",
            n_sentences=10,
        ),
    ]
    strict = settings.with_overrides(offline_min_npmi=0.5, offline_keep_weight=2.0)
    graph = resolve_graph(units, ResolutionOptions.from_settings(strict), OfflineEngine())
    rels = {(r["source"], r["target"]): r for r in graph.relationships.to_pylist()}
    assert rels[("Alpha", "Beta")]["weight"] == 1.0  # one sentence, not two
    assert rels[("Alpha", "Beta")]["npmi"] > 0.5
    assert ("Alpha", "Gamma") not in rels and graph.stats.pruned_edges == 1
    assert graph.entities.num_rows == 3  # pruning never removes entities
    lenient = resolve_graph(
        units,
        ResolutionOptions.from_settings(settings.with_overrides(offline_min_npmi=-1.0)),
        OfflineEngine(),
    )
    assert lenient.relationships.num_rows == 2


def test_npmi_bounds():
    assert npmi(0.1, 0.1, 0.1) == pytest.approx(1.0)
    assert npmi(0.01, 0.1, 0.1) == pytest.approx(0.0)
    assert npmi(0.0, 0.1, 0.1) == -1.0


def test_ids_are_stable_and_text_units_and_claims_link_back(settings):
    units = [
        unit(
            "u1",
            [("Scrooge", "person", "A miser."), ("Marley", "person", "")],
            [("Scrooge", "Marley", "Partners.", 7)],
        ),
        unit("u2", [("Fred", "person", "")]),
    ]
    units[0].claims = [
        RawClaim("scrooge", "Marley", "PARTNERSHIP", "TRUE", None, None, "Partners.", "partners", None, None),
        RawClaim("Nobody", None, "STATEMENT", "SUSPECTED", None, None, "?", "", None, None),
    ]
    one, two = (
        resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine()),
        resolve_graph(units, ResolutionOptions.from_settings(settings), OfflineEngine()),
    )
    assert one.entities.equals(two.entities) and one.relationships.equals(two.relationships)

    import pyarrow as pa

    text_units = pa.table(
        {
            "id": ["u1", "u2", "u3"],
            "entity_ids": [[], [], []],
            "relationship_ids": [[], [], []],
            "covariate_ids": [[], [], []],
        }
    )
    linked = link_text_units(text_units, "entity_ids", one.entities).to_pylist()
    ids = {e["title"]: e["id"] for e in one.entities.to_pylist()}
    assert linked[0]["entity_ids"] == sorted([ids["Scrooge"], ids["Marley"]])
    assert linked[1]["entity_ids"] == [ids["Fred"]] and linked[2]["entity_ids"] == []

    covariates, stats = build_covariates(units, one.entities)
    rows = covariates.to_pylist()
    assert rows[0]["subject_id"] == "Scrooge" and rows[0]["subject_entity_id"] == ids["Scrooge"]
    assert rows[0]["object_entity_id"] == ids["Marley"] and rows[0]["text_unit_id"] == "u1"
    assert rows[1]["subject_id"] == "Nobody" and rows[1]["subject_entity_id"] is None
    assert stats.subjects_resolved == 1
    assert (
        build_covariates(units, one.entities)[0].column("id").to_pylist()
        == covariates.column("id").to_pylist()
    )
