"""The offline description of an entity or relationship (`pipeline.ops.descriptions.offline_summary`):
extractive, deduplicated, within its token budget, the sentence naming the entity first; and a re-run
taking the summaries of unchanged items from the last run (`SummaryReuse`)."""

from __future__ import annotations

from dataclasses import replace

from pipeline.core.tokens import count_tokens
from pipeline.engine.offline import OfflineEngine
from pipeline.ops.descriptions import SummaryReuse, offline_summary
from pipeline.ops.resolution import ResolutionOptions, resolve_graph
from pipeline.settings import Settings
from tests.support.records import unit

LONG = "Jacob Marley " + " ".join(["was Scrooge's partner in the counting-house for many years"] * 12) + "."


def test_a_single_sentence_is_kept_whole_even_past_the_budget():
    assert count_tokens(LONG) > 20
    assert offline_summary(["Jacob Marley"], [LONG, f"  {LONG}"], 20, "o200k_base") == LONG


def test_no_sentence_gives_an_empty_description():
    assert offline_summary(["Jacob Marley"], ["", "   "], 200, "o200k_base") == ""


def test_several_sentences_put_the_one_opening_with_the_name_first_and_fit_the_budget():
    descriptions = [
        "The counting-house was cold and dark all winter long.",
        "Jacob Marley had been dead for seven years by then.",
        "The counting-house was cold and dark all winter long.",
    ]
    out = offline_summary(["Jacob Marley"], descriptions, 200, "o200k_base")
    assert out == (
        "Jacob Marley had been dead for seven years by then. The counting-house was cold and dark all winter long."
    )
    short = offline_summary(["Jacob Marley"], descriptions, 12, "o200k_base")
    assert short == "Jacob Marley had been dead for seven years by then."


# ---- reuse across runs (SummaryReuse) ------------------------------------------------------------------
def _graph_units():
    marley = "Jacob Marley was Scrooge's partner for many years. He died seven years before this night."
    clerk = "Bob Cratchit was Scrooge's clerk. He had a small fire."
    return [
        unit(
            "u1",
            [
                ("Jacob Marley", "person", marley),
                ("Ebenezer Scrooge", "person", "Scrooge kept the counting-house."),
            ],
            [("Jacob Marley", "Ebenezer Scrooge", "Marley was Scrooge's partner.", 1.0)],
            doc="d1",
            method="offline",
        ),
        unit("u2", [("Bob Cratchit", "person", clerk)], doc="d2", method="offline"),
    ]


def _resolve(units, reuse=None, max_tokens: int = 200):
    options = ResolutionOptions.from_settings(Settings())
    options = replace(options, descriptions=replace(options.descriptions, max_tokens=max_tokens))
    return resolve_graph(units, options, OfflineEngine(), reuse=reuse)


def test_a_rerun_takes_every_unchanged_summary_and_writes_the_same_tables():
    first = SummaryReuse()
    fresh = _resolve(_graph_units(), first)
    assert first.current and fresh.stats.summaries.reused == 0
    again = SummaryReuse(previous=first.current)
    rerun = _resolve(_graph_units(), again)
    assert rerun.stats.summaries.reused == len(first.current) and rerun.stats.summaries.offline == 0
    assert rerun.entities.equals(fresh.entities) and rerun.relationships.equals(fresh.relationships)
    assert again.current == first.current  # kept for the run after


def test_a_kept_summary_is_taken_only_for_the_same_descriptions_and_options():
    first = SummaryReuse()
    _resolve(_graph_units(), first)
    # The same digests with other summaries: what a reusing run writes is what it read.
    marked = {digest: f"kept {i}" for i, digest in enumerate(first.current)}
    units = _graph_units()
    units[1].entities[0].description = "Bob Cratchit lived in Camden Town with his family."  # u2 changed
    graph = _resolve(units, SummaryReuse(previous=marked))
    described = {e["title"]: e["description"] for e in graph.entities.to_pylist()}
    assert described["Jacob Marley"].startswith("kept ") and described["Ebenezer Scrooge"].startswith("kept ")
    assert described["Bob Cratchit"] == "Bob Cratchit lived in Camden Town with his family."
    assert graph.stats.summaries.reused == len(first.current) - 1 and graph.stats.summaries.offline == 1
    # Another summary budget is another config: nothing is taken.
    other = _resolve(_graph_units(), SummaryReuse(previous=marked), max_tokens=50)
    assert other.stats.summaries.reused == 0
    assert not any(e["description"].startswith("kept ") for e in other.entities.to_pylist())
