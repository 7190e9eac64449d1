"""Local search: local retrieval (`pipeline.query.retrieval.local_retrieval`: entities matched in the
question → graph neighbourhood → ranked communities → ranked passages → one mixed context within a token
budget) answered by the local answer task (`pipeline.query.local.tasks`), citing the rows it used.

Its config, result and error are the retrieval's, named here as the mode's own for every door.
"""

from __future__ import annotations

from pipeline.query.answer.answer_context import AnswerRequest, LocalContext
from pipeline.query.common.scope import QueryScope
from pipeline.query.local.tasks import ANSWER
from pipeline.query.retrieval.local_retrieval import (
    LocalSearchConfig,
    LocalSearchError,
    LocalSearchResult,
    local_search_with,
)

__all__ = ["LocalSearchConfig", "LocalSearchError", "LocalSearchResult", "local_search_async"]


DEFAULT_CONFIG = LocalSearchConfig()  # built once, as a default argument would be


async def local_search_async(
    scope: QueryScope, question: str, cfg: LocalSearchConfig = DEFAULT_CONFIG
) -> LocalSearchResult:
    async def answer(context: LocalContext) -> str:
        return await scope.ask(ANSWER, AnswerRequest(question, context))

    result, _ = await local_search_with(scope, question, cfg, answer)
    return result
