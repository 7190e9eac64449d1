"""A prompt as the model reads it: the text every mode measures its token budget on, and the answer form
a reduce asks for unless told otherwise (global search's and DRIFT's)."""

from __future__ import annotations

DEFAULT_RESPONSE_TYPE = "multiple paragraphs"


def skeleton_text(messages: list[dict[str, str]]) -> str:
    """The messages' contents, one after the other: what their token count is taken of."""
    return "\n".join(m["content"] for m in messages)
