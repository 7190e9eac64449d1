"""What a prompt is, and the registry of every prompt by name (`PROMPTS`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROMPTS: dict[str, Prompt] = {}


@dataclass(frozen=True)
class Prompt:
    """A prompt, registered in `PROMPTS` under its name as it is made. `revision` counts its wordings:
    bump it when the wording changes."""

    name: str
    revision: int
    system: str
    user: str

    def __post_init__(self) -> None:
        if PROMPTS.setdefault(self.name, self) != self:
            raise ValueError(f"two prompts are named {self.name!r}; each name is one prompt's cache key")

    @property
    def version(self) -> str:
        """What the LLM cache keys the prompt's answers by: `<name>-v<revision>`."""
        return f"{self.name}-v{self.revision}"

    def messages(self, **values: Any) -> list[dict[str, str]]:
        """The chat messages with `values` filled into the user template."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**values)},
        ]
