"""The prompt registry: a prompt registers itself under its name as it is made, and its version (the LLM
cache key's part) is its name and revision, so two prompts can never share a cache key."""

from __future__ import annotations

import pytest

from pipeline import prompts
from pipeline.ops.extraction import packed
from pipeline.prompts import PROMPTS, Prompt


def test_every_prompt_is_registered_under_its_name_with_its_name_in_its_version() -> None:
    made = [v for m in (prompts, packed) for v in vars(m).values() if isinstance(v, Prompt)]
    assert len(made) >= 20
    for prompt in made:
        assert PROMPTS[prompt.name] is prompt
        assert prompt.version == f"{prompt.name}-v{prompt.revision}"
    assert prompts.COMMUNITY_REPORT.version == "community_report-v2"  # the key stored reports carry


def test_a_second_prompt_under_a_taken_name_is_refused() -> None:
    taken = prompts.BASIC_ANSWER
    assert Prompt(taken.name, taken.revision, taken.system, taken.user) == taken  # the same one: fine
    with pytest.raises(ValueError, match="two prompts are named 'basic_answer'"):
        Prompt(taken.name, taken.revision + 1, taken.system, taken.user)
    assert PROMPTS[taken.name] is taken
