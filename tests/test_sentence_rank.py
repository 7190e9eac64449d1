"""The offline answers' sentence ranking (`pipeline.query.retrieval.sentence_rank`): the question's words,
stemmed, decide; the given order breaks ties; nothing is embedded."""

from __future__ import annotations

from pipeline.query.answer.answer_context import ContextRow, LocalContext, offline_answer, ranked_sentences
from pipeline.query.retrieval.sentence_rank import rank_by_question, stems


def test_the_sentence_holding_most_of_the_questions_words_comes_first():
    sentences = [
        "Scrooge sat in his counting-house on Christmas Eve.",
        "The Ghost of Christmas Yet to Come showed what may happen.",
        "At Fezziwig's parties the apprentices danced all night.",
    ]
    ranked = rank_by_question("What happens at Fezziwig's party?", sentences)
    assert [i for i, _ in ranked] == [2, 1, 0]
    assert [round(s, 3) for _, s in ranked] == [0.667, 0.333, 0.0]  # 'parties' is 'party', 'happen' 'happens'


def test_equal_scores_keep_the_given_order_and_a_question_of_stop_words_scores_nothing():
    assert [i for i, _ in rank_by_question("Who is Marley?", ["Marley was dead.", "Marley's ghost."])] == [
        0,
        1,
    ]
    assert rank_by_question("What is it?", ["a", "b"]) == [(0, 0.0), (1, 0.0)]
    assert stems("What were the Cratchits doing?") == {"cratchit"}


def test_the_offline_answer_quotes_each_statement_once_cited_to_its_row():
    row = "Bob Cratchit was Scrooge's clerk in the counting-house. Bob Cratchit was Scrooge's clerk in the counting-house!"
    context = LocalContext(
        text="",
        rows=[
            ContextRow(section="sources", id=1, text="It was a cold bleak biting day outside.", ref={}),
            ContextRow(section="sources", id=2, text=row, ref={}),
        ],
        budget=1000,
        prompt_tokens=10,
    )
    ranked = ranked_sentences("Who was Scrooge's clerk?", context)
    assert [(section, row_id) for section, row_id, *_ in ranked] == [("sources", 2), ("sources", 1)]
    answer = offline_answer("Who was Scrooge's clerk?", context)
    assert (
        answer.splitlines()[0]
        == "- Bob Cratchit was Scrooge's clerk in the counting-house. [Data: Sources (2)]"
    )
