"""The indexing method's settings (`pipeline.runtime.stage_forms`): which stages ask the model, and the
economies of the stages that do.

A section of `Settings` (read as `PIPELINE_INDEX_METHOD`, `PIPELINE_INDEX_STAGE_METHODS`,
`PIPELINE_EXTRACTION_PACK_TOKENS`, `PIPELINE_REPORT_MIN_ENTITIES`, like every other field).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

IndexForm = Literal["model", "nlp"]


class IndexMethodSettings(BaseModel):
    index_method: Literal["standard", "fast", "nlp"] | None = Field(
        default=None,
        description="standard: model extraction, claims, descriptions and reports; fast: the NLP graph "
        "and model reports; nlp: no model. Unset: standard when llm_provider is openai, else nlp",
    )
    index_stage_methods: dict[Literal["extraction", "claims", "descriptions", "reports"], IndexForm] = Field(
        default_factory=dict,
        description="Per-stage override of the method, e.g. {extraction: model, claims: nlp}",
    )
    extraction_pack_tokens: int = Field(
        default=1200, ge=0, description="LLM extraction: text tokens packed into one request; 0 = one unit"
    )
    report_min_entities: int = Field(
        default=10,
        ge=0,
        description="Model-written reports (standard, fast): a community without children and with fewer "
        "entities and fewer claims than this (default: max_cluster_size's default, a leaf as large as "
        "Leiden lets one grow) gets the extractive report (method 'extractive'); 0 = all",
    )
