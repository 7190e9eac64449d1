"""The tokenizer every token budget is counted with (chunking, descriptions, the query prompts)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class TokenizerSettings(BaseModel):
    encoding: Literal["o200k_base", "cl100k_base"] = "o200k_base"
