"""Every prompt the pipeline sends to a model, in one place.

Each prompt carries a revision; its version, `<name>-v<revision>`, is part of the LLM cache key: change
a prompt's wording and bump its revision, and every call that used it is asked again (and only those).
The JSON shape of a task's answer is not written here: the client appends the task's pydantic schema to
the system prompt.

To add a task's prompt: define a `Prompt` in `indexing.py` or `query.py` with revision 1; making it
registers it in `PROMPTS`. Templates use `str.format` fields; write literal braces as `{{` and `}}`.
"""

from pipeline.prompts.base import PROMPTS, Prompt
from pipeline.prompts.eval import *  # noqa: F403
from pipeline.prompts.indexing import *  # noqa: F403
from pipeline.prompts.query import *  # noqa: F403

__all__ = ["PROMPTS", "Prompt"]
