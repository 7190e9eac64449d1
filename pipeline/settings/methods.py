"""The indexing method's settings (`pipeline.runtime.stage_forms`): which stages ask the model.

A section of `Settings` (read as `PIPELINE_INDEX_METHOD` and `PIPELINE_INDEX_STAGE_METHODS`, like every
other field). The economies of the stages that ask it are in their own sections (`indexing.py`:
`extraction_pack_tokens`, `report_min_entities`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

IndexForm = Literal["model", "nlp"]
# The methods and stages are named here only: the runtime's forms, the estimate and the CLI read them.
IndexMethod = Literal["standard", "fast", "nlp"]
IndexStage = Literal["extraction", "claims", "descriptions", "reports"]


class IndexMethodSettings(BaseModel):
    """Which indexing stages ask the model (pipeline.runtime.stage_forms)."""

    index_method: IndexMethod | None = Field(
        default=None,
        description="standard: model extraction, claims, descriptions and reports; fast: the NLP graph "
        "and model reports; nlp: no model. Unset: standard when llm_provider is openai, else nlp",
    )
    index_stage_methods: dict[IndexStage, IndexForm] = Field(
        default_factory=dict,
        description="Per-stage override of the method, e.g. {extraction: model, claims: nlp}",
    )
