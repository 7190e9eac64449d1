"""Digging JSON out of model replies and validating it against a task's model."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from pipeline.llm.structured import extract_json, parse_reply, repair_messages, response_format


class Answer(BaseModel):
    answer: str
    score: int


@pytest.mark.parametrize(
    "reply",
    [
        '{"answer": "yes", "score": 3}',
        '```json\n{"answer": "yes", "score": 3}\n```',
        'Sure! Here it is:\n```\n{"answer": "yes", "score": 3}\n```\nHope that helps.',
        'The answer [1] is: {"answer": "yes", "score": 3} -- done.',
    ],
)
def test_fences_and_prose_are_stripped(reply: str) -> None:
    assert parse_reply(reply, Answer) == Answer(answer="yes", score=3)


def test_a_reply_without_json_is_an_error() -> None:
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json("I would rather not.")


def test_a_schema_mismatch_names_the_field() -> None:
    with pytest.raises(ValueError, match="score"):
        parse_reply('{"answer": "yes", "score": "many"}', Answer)


def test_repair_shows_the_model_its_reply_and_the_error() -> None:
    messages = [{"role": "user", "content": "q"}]
    repaired = repair_messages(messages, "bad", "score: missing")
    assert repaired[:1] == messages
    assert repaired[1] == {"role": "assistant", "content": "bad"}
    assert "score: missing" in repaired[2]["content"]


def test_response_format_carries_the_schema_in_both_modes() -> None:
    schema = Answer.model_json_schema()
    assert response_format(Answer, "json_schema")["json_schema"]["schema"] == schema
    assert response_format(Answer, "json_object") == {"type": "json_object", "schema": schema}
