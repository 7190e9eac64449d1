"""An answer from passages: the passages, best first, as a context holding only its Sources section
(as many as the prompt's budget holds), and the `BASIC_ANSWER` task in its offline and LLM forms. Basic
search answers its nearest passages so, lazy search its relevant units' sentences; the answer cites
`[Data: Sources (7)]`, which `pipeline.query.answer.citations` resolves."""

from __future__ import annotations

from typing import Any

from pipeline import prompts
from pipeline.core.tokens import count_tokens
from pipeline.query.answer.answer_context import ContextRow, LocalContext, answer_task
from pipeline.query.answer.prompt_text import skeleton_text
from pipeline.query.answer.token_budget import pack

HEADER = "-----Sources-----\nid|text"


def basic_messages(question: str, context_text: str) -> list[dict[str, str]]:
    """The answer prompt as sent: the context builder measures its budget on exactly this."""
    return prompts.BASIC_ANSWER.messages(question=question, context=context_text or "(no data)")


BASIC_ANSWER = answer_task("basic_answer", prompts.BASIC_ANSWER, basic_messages)


def build_basic_context(
    question: str, units: list[dict[str, Any]], max_tokens: int, encoding: str
) -> LocalContext:
    """The units, best first, as Sources rows numbered from 1, as many as the prompt's budget holds."""
    skeleton = skeleton_text(basic_messages(question, HEADER))
    all_lines = [f"{n}|{' '.join(u['text'].replace('|', '/').split())}" for n, u in enumerate(units, start=1)]
    kept = pack(all_lines, skeleton + "\n", max_tokens, encoding, sep="\n")
    lines, rows = [all_lines[i] for i in kept], []
    for i in kept:
        unit = units[i]
        ref = {
            k: unit[k] for k in ("text_unit_id", "document_id", "document_title", "start_char", "end_char")
        }
        rows.append(ContextRow(section="sources", id=i + 1, text=unit["text"], ref=ref))
    text = "\n".join([HEADER, *lines]) if lines else ""
    total = count_tokens(skeleton_text(basic_messages(question, text)), encoding)
    return LocalContext(text=text, rows=rows, budget=max_tokens, prompt_tokens=total)
