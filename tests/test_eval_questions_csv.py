"""The eval questions reader keeps a quoted CSV field's line breaks: a spreadsheet's multi-line cell (an
evidence passage, an answer) must not come back with its lines glued together ("x\\ny" as "xy")."""

from __future__ import annotations

import csv
from pathlib import Path

from pipeline.eval.questions import load_questions


def test_quoted_multi_line_fields_keep_their_line_breaks(tmp_path: Path) -> None:
    path = tmp_path / "questions.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)  # quotes the fields that hold line breaks, as a spreadsheet does
        writer.writerow(["id", "question", "answer", "evidence"])
        writer.writerow(
            ["q1", "Who keeps\nthe lighthouse?", "Elin\nVarga", "The keeper Elin Varga\nlogs every ship."]
        )
        writer.writerow(["q2", "Where does the ferry go?", "Halvik", "In winter\r\nthe ferry stops."])
    q1, q2 = load_questions(path)
    assert q1.id == "q1" and q1.question == "Who keeps the lighthouse?"
    assert q1.answers == ("Elin\nVarga",)
    assert q1.gold_passages == ("The keeper Elin Varga\nlogs every ship.",)
    assert q2.id == "q2" and q2.gold_passages == ("In winter\r\nthe ferry stops.",)
