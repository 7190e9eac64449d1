"""What a prompt is, and the registry of every prompt by name (`PROMPTS`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    system: str
    user: str

    def messages(self, **values: Any) -> list[dict[str, str]]:
        """The chat messages with `values` filled into the user template."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**values)},
        ]


PROMPTS: dict[str, Prompt] = {}
