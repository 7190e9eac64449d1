"""The tokenizer every token budget is counted with (chunking, descriptions, the query prompts)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from pipeline.core.tokens import DEFAULT_ENCODING


class TokenizerSettings(BaseModel):
    encoding: Literal["o200k_base", "cl100k_base"] = Field(
        default=DEFAULT_ENCODING, description="tiktoken encoding of every token count (exact, offline)"
    )
