"""The community-report task: its input (a community's budgeted context) and its output (the report).

`CommunityReportResponse` is GraphRAG's report JSON and also the schema the LLM must answer in.
The context keeps both forms: structured rows for the offline engine and the rendered `text` the LLM
reads. Rows carry names and short ids local to the context (1, 2, ... per table, in the order of the
lists below), never the graph's row numbers, so a context (and a reused report, with its citations)
does not change when other parts of the graph are renumbered.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, Field

from pipeline.settings import default_of


class Finding(BaseModel):
    summary: str = Field(description="A one-line summary of the insight")
    explanation: str = Field(
        description="A few sentences explaining the insight, using only the given data, citing the rows "
        "they rest on as [Data: Entities (ids); Relationships (ids); Claims (ids); Reports (ids)]"
    )


class CommunityReportResponse(BaseModel):
    title: str = Field(description="A short, specific name for the community that names its key entities")
    summary: str = Field(
        description="An executive summary: the community's structure, how its entities relate, what matters"
    )
    findings: list[Finding] = Field(min_length=1, description="5 to 10 key insights about the community")
    rating: float = Field(
        ge=0, le=10, description="Importance of the community, from 0 (none) to 10 (highest)"
    )
    rating_explanation: str = Field(description="One sentence explaining the rating")


class ContextEntity(BaseModel):
    id: str
    title: str
    type: str
    description: str
    degree: int


class ContextRelationship(BaseModel):
    id: str
    source: str  # entity titles
    target: str
    source_id: str
    target_id: str
    description: str
    weight: float
    combined_degree: int


class ContextClaim(BaseModel):
    id: str
    subject: str
    object: str | None
    type: str
    status: str
    start_date: str | None
    end_date: str | None
    description: str


class SubReport(BaseModel):
    """A child community's report standing in for its raw rows."""

    community: int
    size: int
    title: str
    summary: str
    findings: list[Finding]
    rank: float
    full_content: str


class ReportContext(BaseModel):
    community: int
    level: int
    size: int  # member entities
    top_entities: list[str]  # member titles by degree, most connected first (a few)
    total_degree: int  # sum of the members' degrees
    sub_reports: list[SubReport] = Field(default_factory=list)
    brief: bool = False  # sub-reports shown as summary, rating and headlines (a parent from its children)
    entities: list[ContextEntity] = Field(default_factory=list)
    relationships: list[ContextRelationship] = Field(default_factory=list)
    claims: list[ContextClaim] = Field(default_factory=list)
    own_tokens: int = 0  # tokens of the community's whole raw context, before any budget
    text: str = ""  # what the LLM reads
    tokens: int = 0  # tokens of `text`; at most the budget


class CommunityReportRequest(BaseModel):
    context: ReportContext
    max_words: int = Field(default=default_of("report_max_words"), ge=10)


class ReportIdentity(NamedTuple):
    """Who writes an engine's reports; all three enter every report's fingerprint, so a change of any
    of them writes the reports again."""

    method: str  # "offline" | "llm"
    model: str  # the model's endpoint and name, or "offline"
    version: str  # the report prompt's or the offline writer's version
