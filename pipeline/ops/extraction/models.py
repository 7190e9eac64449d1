"""The extraction task: what an engine is asked (`ExtractionRequest`), the LLM's validated JSON, and the raw
per-text-unit records both extractors emit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

# The type of an entity whose type no rule or model could name. It means "unknown", not a type of its
# own: resolution folds such mentions into the typed entity of the same name (see pipeline.ops.resolution).
GENERIC_TYPE = "unknown"

ClaimStatus = Literal["TRUE", "FALSE", "SUSPECTED"]


# ---- the request (one text unit) ---------------------------------------------------------------------
@dataclass(frozen=True)
class ExtractionOptions:
    """What both extractors are told besides the text; each reads the options that apply to it."""

    entity_types: tuple[str, ...] = ("organization", "person", "geo", "event")
    extract_claims: bool = True
    max_gleanings: int = 1  # LLM: extra rounds asking for what the first missed
    claim_description: str = "Any claims or facts that could be relevant to information discovery."  # LLM
    window: int = 1  # offline: co-occurrence window in sentences

    @classmethod
    def from_settings(cls, settings: Any) -> ExtractionOptions:
        return cls(
            entity_types=tuple(settings.entity_types),
            extract_claims=bool(settings.extract_claims),
            max_gleanings=settings.extraction_max_gleanings,
            claim_description=settings.claim_description,
            window=settings.offline_cooccurrence_window,
        )


@dataclass(frozen=True)
class ExtractionRequest:
    text: str
    text_unit_id: str
    document_id: str
    start_char: int  # places the unit in its document: offsets in the records are document offsets
    options: ExtractionOptions


@dataclass(frozen=True)
class ExtractorIdentity:
    """What an engine's extraction is, as the index stores and compares it."""

    method: str  # "offline" | "llm": written into every record
    version: str  # the rules' or the prompts' version
    # Everything the output depends on besides the text: a shard part (or a stored unit) made under
    # another config is extracted again.
    config: str
    # True: a unit extracted before under the same `config` is taken from the previous extracted_graph
    # (its id fixes its text). False: it is asked again, and the engine's own cache answers repeats
    # (that way a unit that failed is retried).
    reusable: bool


# ---- LLM output (validated; a reply that does not validate is repaired or retried, then fails) ----
class EntityOut(BaseModel):
    name: str = Field(min_length=1, description="The entity's name, capitalised as in the text")
    type: str = Field(min_length=1, description="One of the requested entity types")
    description: str = Field(
        description="Comprehensive description of the entity's attributes and activities"
    )

    @field_validator("name", "type", "description")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


class RelationshipOut(BaseModel):
    source: str = Field(min_length=1, description="Name of the source entity, as in `entities`")
    target: str = Field(min_length=1, description="Name of the target entity, as in `entities`")
    description: str = Field(description="Why the source and target entities are related")
    strength: int = Field(ge=1, le=10, description="Strength of the relationship, 1 (weak) to 10 (strong)")


class ClaimOut(BaseModel):
    subject: str = Field(min_length=1, description="Entity the claim is about")
    object: str | None = Field(default=None, description="Other entity involved, or null")
    claim_type: str = Field(min_length=1, description="Category of the claim, upper case")
    status: ClaimStatus = Field(description="TRUE, FALSE or SUSPECTED")
    start_date: str | None = Field(default=None, description="ISO-8601 start date, or null")
    end_date: str | None = Field(default=None, description="ISO-8601 end date, or null")
    description: str = Field(description="The claim and the evidence for it")
    source_text: str = Field(description="Verbatim quote from the text that supports the claim")

    @field_validator("status", mode="before")
    @classmethod
    def _upper(cls, v: object) -> object:
        return v.strip().upper() if isinstance(v, str) else v


class ExtractionOut(BaseModel):
    """One extraction reply (the first round or a gleaning round)."""

    entities: list[EntityOut] = Field(default_factory=list)
    relationships: list[RelationshipOut] = Field(default_factory=list)
    claims: list[ClaimOut] = Field(default_factory=list)


# ---- raw records, one set per text unit (the `extracted_graph` table) ------------------------------
@dataclass
class RawEntity:
    name: str
    type: str
    description: str
    round: int = 0  # 0 = first extraction, k = k-th gleaning round
    mentions: int = 1  # occurrences in the text unit
    # Sentence start offsets in the document (offline only): lets resolution count each sentence once
    # although overlapping text units both contain it.
    evidence: list[int] = field(default_factory=list)
    inferred: bool = False  # created by the endpoint rule, not named by the extractor


@dataclass
class RawRelationship:
    source: str
    target: str
    description: str
    strength: float
    round: int = 0
    evidence: list[int] = field(default_factory=list)


@dataclass
class RawClaim:
    subject: str
    object: str | None
    claim_type: str
    status: str
    start_date: str | None
    end_date: str | None
    description: str
    source_text: str
    start_char: int | None = None  # offsets of source_text in the document, when it was found there
    end_char: int | None = None
    round: int = 0


@dataclass
class UnitExtraction:
    """Everything extracted from one text unit, across all rounds."""

    text_unit_id: str
    document_id: str
    method: str  # "offline" | "llm"
    version: str  # extractor / prompt version
    status: str = "ok"  # "ok" | "partial" (a gleaning round failed) | "failed" (nothing extracted)
    rounds: int = 1
    n_sentences: int = 0
    entities: list[RawEntity] = field(default_factory=list)
    relationships: list[RawRelationship] = field(default_factory=list)
    claims: list[RawClaim] = field(default_factory=list)


@dataclass
class ExtractionFailure:
    text_unit_id: str
    document_id: str
    round: int
    error_type: str
    reason: str
