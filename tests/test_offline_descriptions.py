"""The offline description of an entity or relationship (`pipeline.ops.descriptions.offline_summary`):
extractive, deduplicated, within its token budget, the sentence naming the entity first."""

from __future__ import annotations

from pipeline.core.tokens import count_tokens
from pipeline.ops.descriptions import offline_summary

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
