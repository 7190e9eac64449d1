"""The offline summary and global search's offline map split sentences with `pipeline.core.sentences`, so a
title's period ("Mr. Fezziwig") does not end a sentence."""

from __future__ import annotations

from pipeline.engine.summarize import extractive_summary
from pipeline.query.global_.tasks import MapRequest, offline_map


def test_extractive_summary_keeps_mr_with_its_name() -> None:
    # Split at "Mr.", the second text's "Mr." would be a duplicate of the first's and dropped.
    summary = extractive_summary(["Mr. Fezziwig danced.", "Mr. Scrooge watched."], max_words=60)
    assert summary == "Mr. Fezziwig danced. Mr. Scrooge watched."


def test_offline_map_point_is_the_whole_sentence_with_mr() -> None:
    context = (
        "[Community ID: 7 | summary part 1]\n"
        "# Fezziwig, Mrs. Fezziwig and Dick Wilkins\n"
        "Mr. Fezziwig gave a ball in his warehouse on Christmas Eve. The fiddler tuned his fiddle.\n"
    )
    # None: a topic question never reaches the embedder (only a broad one does).
    answer = offline_map(MapRequest(question="What happens at Fezziwig's ball?", context=context), None)
    assert [p.description for p in answer.points][
        0
    ] == "Mr. Fezziwig gave a ball in his warehouse on Christmas Eve."
