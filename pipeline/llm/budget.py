"""The run's LLM budget (`PIPELINE_LLM_BUDGET_USD`): once the run's spend reaches it, no request is sent.

Rules:
- The run's spend is what its earlier steps spent (`spent_before_usd`, handed in by whoever builds the
  engine: the Dagster layer sums the `llm_cost_usd` of the materializations already recorded in the run;
  `index_folder` shares one engine, hence one `Usage`, across its stages and hands in 0) plus what this
  client has spent so far (`Usage.cost_usd`, counted from the server's token counts at the configured
  prices).
- The check runs for every chat request once it holds its concurrency slot, right before it is sent
  (`Transport.chat`), so the calls answered while it waited count; never before a cache lookup: an
  answer that was paid for before is given whatever the budget, so a stopped run resumes from the cache.
- A refused call raises `LLMBudgetExceededError` (an `LLMError`: every stage already turns those into
  failure rows) and counts one `budget_refusals` in the usage.
- Requests already in flight when the spend crosses the budget still complete: a run can overshoot by
  at most `llm_concurrency` calls. A model missing from the price table costs 0, so it never stops.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.llm.errors import LLMBudgetExceededError
from pipeline.llm.usage import Usage


@dataclass(frozen=True)
class Budget:
    limit_usd: float
    spent_before_usd: float = 0.0  # the run's steps that finished before this client was built

    def spent(self, usage: Usage) -> float:
        return self.spent_before_usd + usage.cost_usd

    def check(self, usage: Usage, task: str) -> None:
        """Raise LLMBudgetExceededError (and count the refusal) when the run's spend reached the limit."""
        spent = self.spent(usage)
        if spent < self.limit_usd:
            return
        usage.add(budget_refusals=1)
        raise LLMBudgetExceededError(
            f"budget reached: the run has spent ${spent:.4f} of PIPELINE_LLM_BUDGET_USD=${self.limit_usd:g}, "
            f"so this {task} call was not sent; run again (with a larger budget) to resume from the cache",
            task=task,
            budget_usd=self.limit_usd,
            spent_usd=spent,
        )
