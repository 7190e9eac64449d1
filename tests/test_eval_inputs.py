"""`make eval` reads the corpus and question shapes HippoRAG ships (bench/eval_retrieval.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "eval_retrieval", Path(__file__).resolve().parent.parent / "bench" / "eval_retrieval.py"
)
evaluation = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(evaluation)


def test_list_and_dict_corpora_become_title_text_records():
    as_list = [{"title": "Hank Snow", "text": "Hank Snow was a singer.", "idx": 3}]
    as_dict = {"Hank Snow": ["Hank Snow was a singer.", " He died in Tennessee."]}
    assert evaluation.corpus_records(as_list) == [{"title": "Hank Snow", "text": "Hank Snow was a singer."}]
    assert evaluation.corpus_records(as_dict) == [
        {"title": "Hank Snow", "text": "Hank Snow was a singer. He died in Tennessee."}
    ]
    with pytest.raises(ValueError, match="list of"):
        evaluation.corpus_records("Hank Snow")


def test_gold_passages_from_musique_and_hotpot_questions():
    musique = {
        "paragraphs": [
            {"title": "Hello Love", "is_supporting": True},
            {"title": "Publix", "is_supporting": False},
            {"title": "Hank Snow", "is_supporting": True},
        ]
    }
    hotpot = {"supporting_facts": [["Tennessee", 0], ["Hank Snow", 2], ["Tennessee", 1]]}
    assert evaluation.gold_titles(musique) == ["Hello Love", "Hank Snow"]
    assert evaluation.gold_titles(hotpot) == ["Tennessee", "Hank Snow"]
    with pytest.raises(ValueError, match="unknown question format"):
        evaluation.gold_titles({"question": "?"})


def test_recall_counts_each_gold_title_once_within_k():
    ranked = ["A", "A", "B", "C", "D"]
    assert evaluation.recall(ranked, ["B", "D"], 2) == 0.5
    assert evaluation.recall(ranked, ["B", "D"], 4) == 1.0
