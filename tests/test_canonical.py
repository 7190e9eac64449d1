"""Name canonicalisation: the forms one person's name takes in a corpus become one entity."""

from __future__ import annotations

from pipeline.engine.offline import OfflineEngine
from pipeline.ops.canonical import Merge, canonical_keys
from pipeline.ops.extraction.models import RawEntity, UnitExtraction
from pipeline.ops.resolution import ResolutionOptions, lowercase_words, resolve_graph


def _merges(*pairs: tuple[str, str]) -> dict[str, tuple[str, str]]:
    return {m.key: (m.into, m.rule) for m in canonical_keys(pairs)}


def test_descriptor_and_honorific_forms_join_the_name_and_chains_end_at_the_long_form():
    merges = _merges(
        ("jacob marley", "person"),
        ("marley", "unknown"),
        ("old marley", "unknown"),
        ("mr marley", "person"),
        ("old jacob marley", "unknown"),
    )
    assert merges == {
        "marley": ("jacob marley", "short_form"),
        "mr marley": ("jacob marley", "descriptor_or_honorific"),  # via 'marley'
        "old marley": ("jacob marley", "descriptor_or_honorific"),
        "old jacob marley": ("jacob marley", "descriptor_or_honorific"),
    }


def test_a_short_form_with_two_long_forms_or_another_persons_honorific_stays_apart():
    merges = _merges(
        ("bob cratchit", "person"),
        ("martha cratchit", "person"),
        ("cratchit", "unknown"),
        ("mrs fezziwig", "person"),
        ("fezziwig", "person"),
        ("bob", "unknown"),
    )
    assert "cratchit" not in merges  # Bob or Martha: ambiguous
    assert "mrs fezziwig" not in merges  # another person
    assert merges["bob"] == ("bob cratchit", "short_form")  # a given name alone is its full name too


def test_places_events_and_untyped_pairs_keep_their_names():
    merges = _merges(
        ("christmas", "event"),
        ("christmas eve", "event"),
        ("york", "geo"),
        ("new york", "geo"),
        ("fan", "unknown"),
        ("fan club", "unknown"),
        ("ghost", "person"),
        ("ghost of jacob marley", "person"),
    )
    assert merges == {}  # not person-like, no person mention, or not a plain name ('of')
    assert (
        str(Merge("scrooge", "ebenezer scrooge", "short_form")) == "scrooge -> ebenezer scrooge (short_form)"
    )


def _unit(uid: str, *names: tuple[str, str]) -> UnitExtraction:
    u = UnitExtraction(uid, "doc", "offline", "offline-2", n_sentences=len(names))
    u.entities = [RawEntity(name=n, type=t, description=f"{n} did something.", mentions=1) for n, t in names]
    return u


def test_resolution_titles_the_long_form_keeps_every_form_as_an_alias_and_logs_the_merge():
    units = [
        _unit("u1", ("Ebenezer Scrooge", "person"), ("Scrooge", "unknown")),
        _unit("u2", ("Scrooge", "person"), ("Mr. Scrooge", "person")),
        _unit("u3", ("Scrooge", "unknown")),
    ]
    graph = resolve_graph(units, ResolutionOptions(), OfflineEngine())
    (row,) = graph.entities.to_pylist()
    assert (row["title"], row["type"]) == ("Ebenezer Scrooge", "person")
    assert set(row["aliases"]) == {"Scrooge", "Mr. Scrooge"} and row["frequency"] == 3
    assert sorted(graph.stats.canonical_merges) == [
        "mr scrooge -> ebenezer scrooge (descriptor_or_honorific)",
        "scrooge -> ebenezer scrooge (short_form)",
    ]


def test_when_asked_an_untyped_word_the_corpus_writes_in_lower_case_is_not_an_entity():
    units = [_unit("u1", ("Hope", "unknown"), ("Scrooge", "person")), _unit("u2", ("Hope", "unknown"))]
    texts = ["Hope was gone.", "There was hope, and more hope.", "Hope came back."]
    drop = ResolutionOptions(drop_common_words=True)
    graph = resolve_graph(units, drop, OfflineEngine(), lowercase_words(texts))
    assert [e["title"] for e in graph.entities.to_pylist()] == ["Scrooge"]
    assert graph.stats.common_words_dropped == 1
    kept = resolve_graph(units, drop, OfflineEngine(), lowercase_words(texts[:1]))
    assert {e["title"] for e in kept.entities.to_pylist()} == {"Hope", "Scrooge"}  # 0 lower-case uses < 2
    default = resolve_graph(units, ResolutionOptions(), OfflineEngine(), lowercase_words(texts))
    assert {e["title"] for e in default.entities.to_pylist()} == {"Hope", "Scrooge"}  # the rule is opt-in
