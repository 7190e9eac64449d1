"""Offline global answers by theme: map points grouped by the words and communities they share."""

from __future__ import annotations

from pipeline.query.global_.tasks import ReducePoint, ReduceRequest, cited_communities, offline_reduce
from pipeline.query.global_.themes import content_words, group_into_themes

POINTS = [
    ("Scrooge refused every charity collector and kept his money in the counting-house.", 9, [1]),
    ("The spirits showed Scrooge the poverty of the Cratchit family and their charity.", 8, [2]),
    ("The Cratchit family shared a small goose and a pudding with great joy.", 7, [3]),
    ("Bob Cratchit carried Tiny Tim home from church; the family joy filled the room.", 6, [3]),
    ("Fog and frost hung over the city streets at night.", 5, [4]),
]


def _request() -> ReduceRequest:
    points = [
        ReducePoint(description=d, score=s, community_ids=c, batch=i % 2)
        for i, (d, s, c) in enumerate(POINTS)
    ]
    return ReduceRequest(question="What are the main themes?", points=points, context="")


def test_content_words_drop_function_words_and_plurals():
    words = content_words("The spirits showed their charity, and spirits again")
    assert words == ["spirit", "showed", "charity"]


def test_points_sharing_words_or_a_community_form_one_theme():
    themes = group_into_themes([d for d, _, _ in POINTS], [c for _, _, c in POINTS])
    assert [t.points for t in themes] == [[0, 1], [2, 3], [4]]  # charity / the family's joy / the weather


def test_offline_reduce_names_each_theme_and_cites_its_communities():
    answer = offline_reduce(_request()).answer
    lines = [line for line in answer.splitlines() if line[:2] in ("1.", "2.", "3.", "4.")]
    assert len(lines) == 3
    assert "charity" in lines[0].lower() and cited_communities(lines[0]) == [1, 2]
    assert cited_communities(lines[1]) == [3] and "Cratchit" in lines[1]
    assert sorted(cited_communities(answer)) == [1, 2, 3, 4]
