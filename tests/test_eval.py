"""`pipeline eval` offline: the questions file in every shape it reads (and one-line errors naming the
row), the scores on a context, the bad inputs the CLI refuses without writing anything, and a whole
evaluation of the sample book (samples/demo indexed through the Dagster job) with its report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets.cli import main
from pipeline.eval.metrics import answer_words, content_words, score
from pipeline.eval.questions import EvalQuestion, QuestionsError, load_questions
from pipeline.query.common.shown import Context
from tests.conftest import shared_data


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_csv_and_json_rows_read_the_same(tmp_path: Path):
    row = {"id": "q1", "question": "Who?", "answer": "Bob", "gold_documents": ["a.txt", "b"], "type": "fact"}
    jsonl = load_questions(write(tmp_path / "q.jsonl", json.dumps(row) + "\n\n"))
    as_json = load_questions(write(tmp_path / "q.json", json.dumps([row])))
    csv = load_questions(
        write(tmp_path / "q.csv", 'id,question,answer,gold_documents,type\nq1,Who?,Bob,"a.txt|b",fact\n')
    )
    assert jsonl == as_json == csv
    assert jsonl[0] == EvalQuestion("q1", "Who?", ("Bob",), ("a.txt", "b"), (), "fact")


def test_hipporag_musique_and_graphrag_bench_files_are_read_as_they_are():
    musique = load_questions(shared_data("musique_hipporag100", "musique_train.json"), limit=3)
    assert musique[0].type == "2hop" and musique[0].answers[0] == "G. Stanley Hall"
    assert musique[0].gold_documents == ("Journal of Psychotherapy Integration", "Adolescence")
    assert len(musique[0].gold_passages) == 2  # the supporting paragraphs' text
    bench = load_questions(shared_data("graphrag_bench_novel_a", "novel_questions.json"), limit=2)
    assert bench[0].type == "Fact Retrieval" and bench[0].gold_passages == ("THE DEAN puts on the coat.",)
    hotpot = {"question": "Q?", "answer": "A", "supporting_facts": [["T1", 0], ["T2", 1], ["T1", 2]]}
    from pipeline.eval.questions import parse_row

    assert parse_row(hotpot, 1).gold_documents == ("T1", "T2")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.jsonl", "", "no questions in the file"),
        ("empty.csv", "question,answer\n", "no questions in the file"),
        ("noq.jsonl", '{"question": "ok?"}\n{"answer": "x"}\n', "row 2: no 'question' (fields: answer)"),
        ("noq.csv", "question,answer\nok?,a\n,b\n", "row 3: no 'question'"),
        ("bad.jsonl", '{"question": "ok?"}\n{oops\n', "row 2: not valid JSON"),
        ("bad.json", "[{", "not valid JSON"),
        ("list.json", '[{"question": "q", "gold_documents": 3}]', "row 1: gold_documents must be a list"),
        ("q.txt", "question?", "unknown format '.txt'"),
    ],
)
def test_a_bad_questions_file_is_one_line_naming_the_row(tmp_path: Path, name: str, text: str, message: str):
    with pytest.raises(QuestionsError) as err:
        load_questions(write(tmp_path / name, text))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_recall_counts_gold_documents_and_coverage_the_answers_content_words():
    q = EvalQuestion("1", "q", ("Bob Cratchit, the clerk",), ("a_christmas_carol", "other.txt"), (), "t")
    ctx = Context(texts=["Scrooge's clerk was named Bob."], documents={"a_christmas_carol.txt", "id-1"})
    recall, missing_gold, coverage, missing_words = score(q, ctx)
    assert (recall, missing_gold) == (0.5, ["other.txt"])
    assert content_words("Bob Cratchit, the clerk") == ["bob", "cratchit", "clerk"]
    assert (round(coverage, 3), missing_words) == (0.667, ["cratchit"])


def test_a_gold_passage_counts_when_most_of_its_words_are_in_the_context():
    q = EvalQuestion("1", "q", (), (), ("The Dean puts on the coat.", "Nothing like this here"), "t")
    recall, missing_gold, _, _ = score(q, Context(texts=["then the dean puts his coat on"]))
    assert (recall, missing_gold) == (0.5, ["Nothing like this here"])


def test_the_best_of_the_answer_and_its_aliases_counts():
    q = EvalQuestion("1", "q", ("Granville Stanley Hall", "Stanley Hall"), (), (), "t")
    _, _, coverage, missing = score(q, Context(texts=["Stanley Hall wrote it"]))
    assert (coverage, missing) == (1.0, [])


def test_answer_words_count_the_gold_answers_words_in_the_answer_not_in_its_citations():
    q = EvalQuestion("1", "q", ("Bob Cratchit",), (), (), "t")
    assert answer_words(q, "- Bob is the clerk. [Data: Sources (3)]") == 0.5
    assert answer_words(q, "- The clerk. [Data: Entities (Bob Cratchit)]") == 0.0
    assert answer_words(EvalQuestion("2", "q", (), (), (), "t"), "anything") is None


@pytest.fixture
def questions(tmp_path: Path) -> Path:
    rows = [
        {
            "id": "clerk",
            "question": "How is Scrooge related to Bob Cratchit?",
            "answer": "Bob Cratchit is Scrooge's clerk",
            "gold_documents": ["a_christmas_carol.txt"],
            "type": "relation",
        },
        {
            "id": "themes",
            "question": "What are the main themes of the story?",
            "answer": "redemption and generosity",
            "type": "summary",
        },
    ]
    return write(tmp_path / "q.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--modes", "basic,nope"], 2, "error: unknown mode nope; modes are basic, local, drift, global"),
        (["--questions", "EMPTY"], 2, "no questions in the file"),
        (["--questions", "NOQ"], 2, "row 1: no 'question'"),
        (["--namespace", "nothere"], 3, "error: namespace 'nothere' is not indexed"),
    ],
)
def test_bad_input_is_one_line_an_exit_code_and_nothing_written(
    tmp_path: Path, storage_root: Path, questions: Path, capsys, argv: list[str], code: int, message: str
):
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.txt").write_text("an earlier report")
    files = {"EMPTY": write(tmp_path / "e.jsonl", ""), "NOQ": write(tmp_path / "n.jsonl", '{"q": 1}\n')}
    args = {"--namespace": "nothere", "--questions": str(questions), "--out": str(out)}
    args |= {k: str(files.get(v, v)) for k, v in zip(argv[::2], argv[1::2], strict=True)}
    assert main(["eval", *(x for kv in args.items() for x in kv)]) == code
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert sorted(p.name for p in tmp_path.joinpath("out").iterdir()) == ["kept.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []


@pytest.mark.matrix(doors=("pipeline eval",), modes=("basic", "global", "auto"))
def test_eval_of_the_sample_book_writes_the_report_and_prints_the_metrics(
    sample_book: Path, questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(sample_book))
    out = tmp_path / "report"
    argv = ["eval", "--namespace", "demo", "--questions", str(questions), "--modes", "basic,global,auto"]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["modes"] == ["basic", "global", "auto"] and printed["questions"] == 2
    basic = printed["metrics"]["basic"]
    assert basic["overall"]["questions"] == 2 and basic["overall"]["statuses"] == {"completed": 2}
    # the one gold document is the book: every passage basic search shows comes from it
    assert basic["by_type"]["relation"]["context_recall"] == 100.0
    assert basic["by_type"]["summary"]["context_recall"] is None  # no gold given
    assert 0 < basic["by_type"]["relation"]["answer_coverage"] <= 100
    # the answer quotes part of its context, so it holds at most what the context holds
    assert basic["overall"]["answer_words"] <= basic["overall"]["answer_coverage"]
    assert printed["metrics"]["auto"]["overall"]["routes"]  # which mode auto chose, counted
    assert sorted(p.name for p in out.iterdir()) == ["chart.html", "report.html", "report.json", "report.md"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<svg" in page and "http" not in page  # self-contained: names no URL, fetches nothing
    assert "Worst questions per mode" in page and "clerk" in page
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert len(saved["rows"]) == 6 and saved["metrics"] == printed["metrics"]


def test_the_eval_report_asset_attaches_the_tables_and_the_chart(
    sample_book: Path, questions: Path, dagster_instance, monkeypatch: pytest.MonkeyPatch
):
    from dagster import materialize

    from assets.eval_asset import eval_report
    from assets.launch import add_namespace
    from assets.resources import default_resources

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(sample_book))
    add_namespace(dagster_instance, "demo")
    config = {"questions_file": str(questions), "modes": ["basic", "lazy"]}
    result = materialize(
        [eval_report],
        partition_key="demo",
        instance=dagster_instance,
        resources=default_resources(),
        run_config={"ops": {"eval_report": {"config": config}}},
    )
    assert result.success
    metadata = result.asset_materializations_for_node("eval_report")[0].metadata
    assert metadata["questions"].value == 2 and metadata["modes"].value == "basic, lazy"
    table = metadata["metrics"].value
    assert table.startswith("| mode | questions |") and "| lazy | 2 |" in table and "relation" in table
    chart = Path(metadata["chart"].value)
    assert (
        chart.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        and chart.parent == sample_book / "demo" / "eval"
    )
    assert json.loads((chart.parent / "report.json").read_text(encoding="utf-8"))["modes"] == [
        "basic",
        "lazy",
    ]
