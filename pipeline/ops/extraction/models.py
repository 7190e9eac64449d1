"""The extraction task: what an engine is asked (`ExtractionRequest`), the LLM's validated JSON, and the raw
per-text-unit records both extractors emit.

Validation of the LLM's JSON, record by record:
- the three lists are required: a reply without them is no answer (e.g. a fragment of a cut-off one);
- a record that fails validation is dropped and its reason kept (`ExtractionOut.dropped`); the rest of
  the unit stays. A reply whose every record failed is invalid as a whole (the client asks for a repair);
- where the intent is clear a value is fixed, not dropped: a strength outside 1-10 is clamped, a claim
  status spelled otherwise ("true", "Suspected", "alleged") is normalised, names are stripped;
- entity types are mapped onto the requested ones (`map_entity_type`); the extractor turns any other
  type into GENERIC_TYPE and counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from pipeline.settings.bound import FromSettings, setting

# The type of an entity whose type no rule or model could name. It means "unknown", not a type of its
# own: resolution folds such mentions into the typed entity of the same name (see pipeline.ops.resolution).
GENERIC_TYPE = "unknown"

ClaimStatus = Literal["TRUE", "FALSE", "SUSPECTED"]
# Spellings of a claim status whose meaning is clear, beyond the upper-cased three.
_STATUS_WORDS = {
    "TRUE": ("true", "yes", "confirmed", "verified", "correct", "fact", "factual"),
    "FALSE": ("false", "no", "refuted", "denied", "incorrect", "untrue", "disproven", "debunked"),
    "SUSPECTED": (
        "suspected",
        "suspect",
        "alleged",
        "allegedly",
        "unverified",
        "unconfirmed",
        "possible",
        "possibly",
        "likely",
        "probable",
        "probably",
        "claimed",
        "rumoured",
        "rumored",
    ),
}
CLAIM_STATUSES = {word: status for status, words in _STATUS_WORDS.items() for word in words}
# Entity type names a model uses for a requested type; each applies only when its target was requested.
TYPE_SYNONYMS = {
    "organisation": "organization",
    "org": "organization",
    "company": "organization",
    "institution": "organization",
    "agency": "organization",
    "people": "person",
    "individual": "person",
    "character": "person",
    "human": "person",
    "location": "geo",
    "place": "geo",
    "city": "geo",
    "country": "geo",
    "region": "geo",
    "gpe": "geo",
    "geography": "geo",
    "geographic location": "geo",
}


# ---- the request (one text unit) ---------------------------------------------------------------------
@dataclass(frozen=True)
class ExtractionOptions(FromSettings):
    """What both extractors are told besides the text; each reads the options that apply to it."""

    entity_types: tuple[str, ...] = setting("entity_types", tuple)
    extract_claims: bool = setting("extract_claims", bool)
    max_gleanings: int = setting("extraction_max_gleanings")  # LLM: extra rounds asking for what was missed
    claim_description: str = setting("claim_description")  # LLM
    window: int = setting("offline_cooccurrence_window")  # offline: co-occurrence window in sentences
    ner: bool = True  # offline: spaCy's NER types and adds names (the nlp method); False: the rules alone
    encoding: str = setting("encoding")  # counts the text units packed into one request (`packed.plan_packs`)
    # text tokens packed into one request at most; 0: one unit per request
    pack_tokens: int = setting("extraction_pack_tokens")
    processes: int = setting("extraction_processes")  # offline: pack workers; 0: one per core on a long run


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
# A name or text with its surrounding whitespace removed, after the field's own checks (as a model
# writes " Scrooge", a name with a space is still the name); the JSON schema the model sees is a string's.
Stripped = Annotated[str, AfterValidator(str.strip)]


class EntityOut(BaseModel):
    name: Stripped = Field(min_length=1, description="The entity's name, capitalised as in the text")
    type: Stripped = Field(min_length=1, description="One of the requested entity types")
    description: Stripped = Field(
        description="Comprehensive description of the entity's attributes and activities"
    )


class RelationshipOut(BaseModel):
    source: Stripped = Field(min_length=1, description="Name of the source entity, as in `entities`")
    target: Stripped = Field(min_length=1, description="Name of the target entity, as in `entities`")
    description: Stripped = Field(description="Why the source and target entities are related")
    strength: int = Field(ge=1, le=10, description="Strength of the relationship, 1 (weak) to 10 (strong)")

    @field_validator("strength", mode="before")
    @classmethod
    def _clamp(cls, v: object) -> object:
        """A number outside 1-10 (or a numeric string, or a fraction) still says weak or strong."""
        if isinstance(v, str):
            try:
                v = float(v.strip())
            except ValueError:
                return v
        if isinstance(v, int | float) and not isinstance(v, bool) and v == v:  # v == v: not NaN
            return int(min(max(round(v), 1), 10))
        return v


class ClaimOut(BaseModel):
    subject: Stripped = Field(min_length=1, description="Entity the claim is about")
    object: str | None = Field(default=None, description="Other entity involved, or null")
    claim_type: Stripped = Field(min_length=1, description="Category of the claim, upper case")
    status: ClaimStatus = Field(description="TRUE, FALSE or SUSPECTED")
    start_date: str | None = Field(default=None, description="ISO-8601 start date, or null")
    end_date: str | None = Field(default=None, description="ISO-8601 end date, or null")
    description: str = Field(description="The claim and the evidence for it")
    source_text: str = Field(description="Verbatim quote from the text that supports the claim")

    @field_validator("status", mode="before")
    @classmethod
    def _normalise(cls, v: object) -> object:
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, str):
            return CLAIM_STATUSES.get(v.strip().strip(".").lower(), v.strip().upper())
        return v


_RECORDS: dict[str, type[BaseModel]] = {
    "entities": EntityOut,
    "relationships": RelationshipOut,
    "claims": ClaimOut,
}


class ExtractionOut(BaseModel):
    """One extraction reply (the first round or a gleaning round), validated record by record."""

    entities: list[EntityOut]
    relationships: list[RelationshipOut]
    claims: list[ClaimOut]
    # Why each dropped record failed. Not in the schema the model sees; kept in the cached reply so
    # that a re-run counts the same drops.
    dropped: SkipJsonSchema[list[str]] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _drop_invalid_records(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        dropped = [str(d) for d in out.get("dropped") or []]
        kept_any = False
        for key, record in _RECORDS.items():
            items = out.get(key)
            if not isinstance(items, list):
                continue  # missing or not a list: the field's own error says so
            kept = []
            for i, item in enumerate(items):
                try:
                    kept.append(record.model_validate(item))
                except ValidationError as exc:
                    dropped.append(f"{key}[{i}]: {_reason(exc)}")
            kept_any = kept_any or bool(kept)
            out[key] = kept
        if dropped and not kept_any and not data.get("dropped"):
            raise ValueError(f"every record is invalid: {'; '.join(dropped[:5])}")
        out["dropped"] = dropped
        return out


def _reason(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(record)'}: {e['msg']}"
        for e in exc.errors(include_url=False)
    )


def map_entity_type(raw: str, allowed: tuple[str, ...]) -> str | None:
    """The requested type (lower case) that `raw` names, or None when it names none of them."""
    wanted = {t.strip().lower() for t in allowed}
    name = " ".join(raw.replace("_", " ").replace("-", " ").lower().split())
    singular = name[:-1] if name.endswith("s") else name
    for candidate in (name, singular, TYPE_SYNONYMS.get(name), TYPE_SYNONYMS.get(singular)):
        if candidate in wanted:
            return candidate
    return None


# ---- raw records, one set per text unit (the `extracted_graph` table) ------------------------------
# slots: a stage that reads the table builds them by the hundred thousand (99k on the 11 MB scale corpus),
# and a slotted dataclass is built in half the time.
@dataclass(slots=True)
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


@dataclass(slots=True)
class RawRelationship:
    source: str
    target: str
    description: str
    strength: float
    round: int = 0
    evidence: list[int] = field(default_factory=list)


@dataclass(slots=True)
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
    dropped_records: int = 0  # LLM records that failed validation, across rounds
    retyped_entities: int = 0  # LLM entities of a type not requested, stored as GENERIC_TYPE
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
