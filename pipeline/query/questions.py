"""Saved questions for the query-time assets: from run config or a file (one per line, or a CSV)."""

from __future__ import annotations

import csv
from pathlib import Path

DEFAULT_GLOBAL_QUESTIONS = ("What are the main themes of this collection?",)


def load_questions(
    questions: list[str] | None = None,
    questions_file: str | None = None,
    default: tuple[str, ...] = DEFAULT_GLOBAL_QUESTIONS,
) -> list[str]:
    """Questions in order, de-duplicated; the default set when neither is given."""
    found: list[str] = [q.strip() for q in (questions or []) if q and q.strip()]
    if questions_file:
        path = Path(questions_file)
        if not path.is_file():
            raise FileNotFoundError(f"questions file {path} does not exist")
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix.lower() == ".csv":
            rows = list(csv.DictReader(text.splitlines()))
            column = next(
                (c for c in ("question", "question_text", "questions", "query") if rows and c in rows[0]),
                None,
            )
            if column is None:
                raise ValueError(f"{path}: a CSV of questions needs a 'question' column")
            found += [r[column].strip() for r in rows if r[column] and r[column].strip()]
        else:
            found += [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return list(dict.fromkeys(found)) or list(default)
