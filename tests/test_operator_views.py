"""What an operator reads on the sample book: the piece a vector hit matched, and answers that never
quote the front matter the index masked (illustration captions, credits, lists of illustrations)."""

from __future__ import annotations

import json
import os

from pipeline.core import schema
from pipeline.core.boilerplate import content_span
from pipeline.io.store import NamespaceStore
from tests.support.cli import run_cli

MARLEY = "Marley was dead, to begin with."


def _cli(sample_book, *args):
    return run_cli({**os.environ, "PIPELINE_STORAGE_ROOT": str(sample_book)}, *args)


def test_vector_query_shows_the_matching_sentence_of_the_top_hit_with_its_offsets(sample_book):
    args = ("query", "vector", "--namespace", "demo", "--top-k", "3", MARLEY)
    shown = _cli(sample_book, *args)
    assert shown.returncode == 0, shown.stderr[-2000:]
    top_hit = shown.stdout.split("\n2. ")[0]
    assert "**Marley** was **dead**, to **begin** with." in top_hit, shown.stdout
    out = _cli(sample_book, *args, "--json")
    hit = json.loads(out.stdout)[0]
    (doc,) = NamespaceStore(sample_book, "demo").read_table(schema.DOCUMENTS).to_pylist()
    match = hit["match"]
    assert match["text"] == MARLEY
    assert doc["text"][match["start_char"] : match["end_char"]] == MARLEY
    assert hit["start_char"] <= match["start_char"] < match["end_char"] <= hit["end_char"]


def _front_matter_quotes(doc_text: str) -> list[str]:
    """Each masked region's text, whitespace collapsed (those long enough to be a quote)."""
    quotes = [" ".join(doc_text[r.start : r.end].split()) for r in content_span(doc_text).regions]
    return [q for q in quotes if len(q) >= 24]


def test_no_local_drift_or_basic_answer_quotes_a_masked_front_matter_region(sample_book):
    from pipeline.api import basic_search, drift_search, local_search
    from pipeline.settings import Settings

    settings = Settings(storage_root=sample_book)
    (doc,) = NamespaceStore(sample_book, "demo").read_table(schema.DOCUMENTS).to_pylist()
    quotes = _front_matter_quotes(doc["text"])
    assert any(q.startswith("[Illustration") for q in quotes) and any("Produced by" in q for q in quotes)
    answers = {}
    for question in ("How is Scrooge related to Bob Cratchit?", "What happens at Fezziwig's party?"):
        local = local_search("demo", question, settings=settings)
        answers[f"local: {question}"] = [local.answer, *(e["text"] for e in local.evidence)]
        answers[f"drift: {question}"] = [drift_search("demo", question, settings=settings).answer]
        answers[f"basic: {question}"] = [basic_search("demo", question, settings=settings).answer]
    for name, texts in answers.items():
        said = " ".join(" ".join(t.split()) for t in texts)
        assert "[Illustration" not in said and "Proofreading Team" not in said, name
        for quote in quotes:
            assert quote[:60] not in said, (name, quote)


def test_offline_broad_question_leads_with_the_two_highest_ranked_top_level_communities(sample_book):
    import re

    from pipeline.api import global_search
    from pipeline.settings import Settings

    settings = Settings(storage_root=sample_book)
    result = global_search("demo", "What are the main themes of the story?", settings=settings)
    assert result.status == "completed"
    reports = NamespaceStore(sample_book, "demo").read_table(schema.COMMUNITY_REPORTS).to_pylist()
    top = sorted((r for r in reports if r["level"] == 0), key=lambda r: (-r["rank"], r["community"]))
    themes = re.findall(r"^\d+\. \*\*(.+?)\*\* .*\[Community ID: (\d+)\]$", result.answer, re.MULTILINE)
    assert [(t, int(c)) for t, c in themes[:2]] == [(r["title"], r["community"]) for r in top[:2]]
    assert result.cited_communities[:2] == [r["community"] for r in top[:2]]


def test_offline_topic_question_keeps_its_similarity_scored_themes(sample_book):
    from pipeline.api import global_search
    from pipeline.settings import Settings

    settings = Settings(storage_root=sample_book)
    result = global_search("demo", "What happens at Fezziwig's party?", settings=settings)
    assert result.status == "completed" and "themes run through" in result.answer
    assert "most central" not in result.answer
