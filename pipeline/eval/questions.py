"""A questions file for `pipeline eval`: one question a row, read from JSONL, CSV or JSON.

A row has `question` and any of `answer`, `gold_documents` (titles or ids), `gold_passages` (text) and
`type` (a free label the report groups by); `id` is optional. The files HippoRAG ships (MuSiQue:
`paragraphs[{title, paragraph_text, is_supporting}]`, `answer_aliases`; HotpotQA / 2WikiMultihopQA:
`supporting_facts [[title, sentence]]`) and GraphRAG-Bench's (`question_type`, `evidence`) are read as
they are. In CSV, a list column holds a JSON list or values separated by `|`.

Every problem is a `QuestionsError` whose message is one line naming the file and the row (1-based; in
CSV the header is row 1, so rows are counted as a spreadsheet shows them).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class QuestionsError(ValueError):
    """A questions file that cannot be evaluated, said in one line."""


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: tuple[str, ...] = ()  # the answer first, then its aliases
    gold_documents: tuple[str, ...] = ()
    gold_passages: tuple[str, ...] = ()
    type: str = "all"
    gold_pages: tuple[
        tuple[str, int], ...
    ] = ()  # (document title, 1-based page); after type: positional callers
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def answer(self) -> str:
        return self.answers[0] if self.answers else ""


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise QuestionsError(f"{what} is not a JSON list ({exc.msg})") from None
        else:
            return tuple(s.strip() for s in text.split("|") if s.strip())
    if not isinstance(value, list):
        raise QuestionsError(f"{what} must be a list of strings, not {type(value).__name__}")
    return tuple(str(v).strip() for v in value if v is not None and str(v).strip())


def _hop_type(qid: str) -> str:
    """MuSiQue's ids start with the hop count (`2hop__...`), its only question type."""
    m = re.match(r"(\d+hop)", qid)
    return m.group(1) if m else "all"


def _gold_pages(value: Any, number: int) -> tuple[tuple[str, int], ...]:
    """`[{"document": "gnuplot.pdf", "page": 37}, ...]` as (document, page) pairs."""
    if value is None:
        return ()
    pages = []
    for item in value if isinstance(value, list) else [value]:
        page = item.get("page") if isinstance(item, dict) else None
        if (
            not isinstance(item, dict)
            or not item.get("document")
            or isinstance(page, bool)
            or not isinstance(page, int)
        ):
            raise QuestionsError(f'row {number}: gold_pages items are {{"document": name, "page": number}}')
        pages.append((str(item["document"]), page))
    return tuple(pages)


def parse_row(row: Any, number: int) -> EvalQuestion:
    """One row, in any of the shapes the module docstring lists; `number` names it in an error."""
    if not isinstance(row, dict):
        raise QuestionsError(f"row {number}: expected an object with 'question', got {type(row).__name__}")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise QuestionsError(f"row {number}: no 'question' (fields: {', '.join(sorted(row)) or 'none'})")
    try:
        answer = row.get("answer")
        answers = _strings([answer] if isinstance(answer, str) else answer, "answer")
        answers += _strings(row.get("answer_aliases"), "answer_aliases")
        documents = _strings(row.get("gold_documents"), "gold_documents")
        passages = _strings(row.get("gold_passages"), "gold_passages")
    except QuestionsError as exc:
        raise QuestionsError(f"row {number}: {exc}") from None
    qid = str(row.get("id") or row.get("_id") or number)
    kind = row.get("type") or row.get("question_type")
    if isinstance(row.get("paragraphs"), list):  # MuSiQue
        gold = [p for p in row["paragraphs"] if isinstance(p, dict) and p.get("is_supporting")]
        documents = documents or tuple(dict.fromkeys(str(p.get("title", "")) for p in gold if p.get("title")))
        passages = passages or tuple(str(p["paragraph_text"]) for p in gold if p.get("paragraph_text"))
        kind = kind or _hop_type(qid)
    elif isinstance(row.get("supporting_facts"), list):  # HotpotQA / 2Wiki
        titles = (f[0] for f in row["supporting_facts"] if isinstance(f, list | tuple) and f)
        documents = documents or tuple(dict.fromkeys(str(t) for t in titles))
    if not passages and isinstance(row.get("evidence"), str) and row["evidence"].strip():  # GraphRAG-Bench
        passages = (row["evidence"].strip(),)
    return EvalQuestion(
        id=qid,
        question=" ".join(question.split()),
        answers=tuple(dict.fromkeys(answers)),
        gold_documents=documents,
        gold_passages=passages,
        gold_pages=_gold_pages(row.get("gold_pages"), number),
        type=str(kind).strip() if kind else "all",
        extra={k: row[k] for k in ("source",) if k in row},
    )


def _rows(path: Path, text: str) -> list[tuple[int, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        # A quoted field may hold line breaks (a spreadsheet's multi-line cell): the reader gets the text
        # whole, as a file opened with newline="", never split into lines first.
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not reader.fieldnames:
            return []
        return [(n, dict(r)) for n, r in enumerate(reader, start=2)]
    if suffix in (".jsonl", ".ndjson"):
        out = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise QuestionsError(f"{path}: row {n}: not valid JSON ({exc.msg})") from None
        return out
    if suffix == ".json":
        try:
            data = json.loads(text) if text.strip() else []
        except json.JSONDecodeError as exc:
            raise QuestionsError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(data, dict) and isinstance(data.get("questions"), list):
            data = data["questions"]
        if not isinstance(data, list):
            raise QuestionsError(f"{path}: expected a list of questions, got {type(data).__name__}")
        return list(enumerate(data, start=1))
    raise QuestionsError(f"{path}: unknown format {suffix or '(no extension)'!r}; use .jsonl, .csv or .json")


def load_questions(path: str | Path, limit: int | None = None) -> list[EvalQuestion]:
    """The file's questions (the first `limit`), each validated; QuestionsError names the first bad row."""
    path = Path(path)
    if not path.is_file():
        raise QuestionsError(f"{path}: no such file")
    try:
        # Decoded without newline translation: a quoted CSV field's "\r\n" is the field's own text.
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionsError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    rows = _rows(path, text)
    if not rows:
        raise QuestionsError(f"{path}: no questions in the file")
    out = []
    for number, row in rows[:limit] if limit is not None else rows:
        try:
            out.append(parse_row(row, number))
        except QuestionsError as exc:
            raise QuestionsError(f"{path}: {exc}") from None
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise QuestionsError(f"{path}: id {dup!r} is given to more than one row")
    return out
