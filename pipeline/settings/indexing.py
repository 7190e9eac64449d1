"""The indexing stages' sections of `Settings`: ingest, chunking, extraction, resolution, descriptions,
communities, reports. Each op's options are built from its own section (`from_settings`); `Settings`
mixes every section in, so the names and `PIPELINE_*` variables are unchanged.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic_settings import NoDecode

from pipeline.core.parse_defaults import default as parse_default
from pipeline.settings.tokenizer import TokenizerSettings


class IngestSettings(BaseModel):
    """Reading documents (pipeline.ops.ingest) and the budgets a parsed file is read under (docs/parsing.md)"""

    # The parse budgets' defaults are written in pipeline.core.parse_defaults (DEFAULTS), which
    # pipeline.parse.bounds reads too (the parse worker imports it without this model); they are sized for
    # a 2-core, 24 GB machine.

    max_document_bytes: int = Field(default=20_000_000, ge=1, description="Larger documents are rejected")
    fallback_encodings: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Tried after UTF-8, e.g. ['latin-1']"
    )
    id_column: str = Field(default="id", description="Id column of row files (.json, .jsonl, .csv, .parquet)")
    title_column: str = Field(default="title", description="Title column of row files")
    text_column: str = Field(default="text", description="Text column of row files")
    parse_memory_mb: int = Field(
        default=parse_default("memory_mb"),
        ge=128,
        description="Address space (RLIMIT_AS) of the worker process each parsed file is read in; a file "
        "that needs more is refused as too_large_expanded, and the run goes on",
    )
    parse_cpu_seconds: float = Field(
        default=parse_default("cpu_seconds"),
        gt=0,
        description="CPU seconds one file's parse may take (RLIMIT_CPU), else parse_timeout",
    )
    parse_wall_seconds: float = Field(
        default=parse_default("wall_seconds"),
        gt=0,
        description="Wall-clock seconds one file's parse may take, OCR included, else parse_timeout (the "
        "worker and its Tesseract are killed)",
    )
    parse_max_output_mb: int = Field(
        default=parse_default("max_output_mb"),
        ge=1,
        description="Parsed text and layout one file may hand back from its worker, else too_large",
    )
    parse_max_expanded_mb: int = Field(
        default=parse_default("max_expanded_mb"),
        ge=1,
        description="Bytes a DOCX, PPTX or EPUB may inflate to, counted as they inflate (never the "
        "headers' sizes), else too_large_expanded",
    )
    parse_max_expansion_ratio: float = Field(
        default=parse_default("max_expansion_ratio"),
        gt=1,
        description="Inflated bytes over the file's size a DOCX, PPTX or EPUB may reach once past 4 MB "
        "inflated, else too_large_expanded (a zip bomb)",
    )
    parse_max_pages: int = Field(
        default=parse_default("max_pages"),
        ge=1,
        description="Pages in a PDF's page tree, else too_many_pages (refused before any page is read)",
    )
    parse_max_page_points: float = Field(
        default=parse_default("max_page_points"),
        gt=0,
        description="A PDF page's larger side in points; a larger page is not read (page_too_large); "
        "14,400 is PDF's own limit",
    )
    ocr_dpi: int = Field(
        default=parse_default("ocr_dpi"), ge=50, description="Resolution OCR renders a page at"
    )
    ocr_min_dpi: int = Field(
        default=parse_default("ocr_min_dpi"),
        ge=10,
        description="A page too large for ocr_max_pixels at ocr_dpi is rendered at fewer dpi, down to this; "
        "one that would need fewer is not read (page_too_large)",
    )
    ocr_max_pixels: int = Field(
        default=parse_default("ocr_max_pixels"),
        ge=100_000,
        description="Pixels of one page rendered for OCR (a letter page at 300 dpi is 8.4 million)",
    )
    ocr_max_pages: int = Field(
        default=parse_default("ocr_max_pages"),
        ge=0,
        description="Pages OCR reads per document; the rest are an ocr_budget row (the document is refused "
        "with it when no page was read)",
    )
    ocr_max_seconds: float = Field(
        default=parse_default("ocr_max_seconds"),
        ge=0,
        description="Seconds of OCR per document, likewise",
    )
    ocr_run_max_pages: int = Field(
        default=2000, ge=0, description="Pages OCR reads in one ingest run, over all its documents"
    )
    ocr_run_max_seconds: float = Field(
        default=3600.0, ge=0, description="Seconds of OCR in one ingest run, over all its documents"
    )


class ChunkingSettings(TokenizerSettings):
    """Token windows (GraphRAG default 1200/100, o200k_base)."""

    chunk_size: int = Field(
        default=1200, ge=16, description="Tokens per text unit (GraphRAG's default; its paper used 600)"
    )
    chunk_overlap: int = Field(default=100, ge=0, description="Tokens shared by consecutive text units")


class ExtractionSettings(BaseModel):
    """Graph extraction, model or offline rules (pipeline.ops.extraction)."""

    # Graph extraction (GraphRAG defaults: these four types, 1 gleaning round)
    entity_types: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["organization", "person", "geo", "event"],
        description="Entity types to extract (comma-separated in the env var). The NLP extractor types these "
        "four from spaCy's labels and keeps its other naming labels as group, work, product, law, language; "
        "an LLM type outside the list is mapped onto it when the name says so (Location -> geo), else "
        "stored as unknown and counted",
    )
    extraction_max_gleanings: int = Field(default=1, ge=0, description="Extra 'what did you miss' rounds")
    extraction_pack_tokens: int = Field(
        default=1200, ge=0, description="LLM extraction: text tokens packed into one request; 0 = one unit"
    )
    extraction_processes: int = Field(
        default=0,
        ge=0,
        description="Offline extraction: worker processes that extract the packs (the rules and spaCy are "
        "one core's work each); 0 = one per core when a run has 256 units or more, 1 = in process. The "
        "records are the same either way; a worker that dies costs no unit (its pack is extracted in "
        "process); dask's daemonic workers extract in process",
    )
    extract_claims: bool = Field(default=True, description="Extract claims (covariates) beside the graph")
    claim_description: str = Field(
        default="Any claims or facts that could be relevant to information discovery.",
        description="What the LLM extraction prompt asks claims to be (GraphRAG's default wording)",
    )
    offline_cooccurrence_window: int = Field(
        default=1,
        ge=0,
        description="Sentences that link two entities: 1 = same sentence, 0 = whole text unit",
    )


class DescriptionSettings(TokenizerSettings):
    """Description summaries (pipeline.ops.descriptions)."""

    description_max_tokens: int = Field(default=200, ge=16, description="Offline summary budget")
    summarize_max_input_tokens: int = Field(default=4000, ge=64, description="Per LLM summary call")
    summarize_max_words: int = Field(
        default=500, ge=10, description="Length asked of an LLM description summary"
    )


class ResolutionSettings(DescriptionSettings):
    """Entity resolution and the offline graph's edge rules (pipeline.ops.resolution), with the
    description summaries resolution makes."""

    resolution_fuzzy_threshold: float = Field(
        default=92.0, ge=0, le=100, description="rapidfuzz ratio to merge same-type names; 100 = exact only"
    )
    offline_min_npmi: float = Field(
        default=0.0, ge=-1, le=1, description="Co-occurrence edges below this NPMI are pruned ..."
    )
    offline_keep_weight: float = Field(default=2.0, description="... unless seen in this many sentences")
    offline_drop_common_words: bool = Field(
        default=False,
        description="Drop untyped one-word offline names the corpus also writes in lower case ('Hope'); off by "
        "default: it lowers the sample book's unknown share from 18.5% to 13.4% but costs local search "
        "recall on MuSiQue (R@10 76.8 -> 75.1 with the NLP extractor)",
    )


class CommunitySettings(BaseModel):
    """Hierarchical Leiden (GraphRAG's defaults)."""

    max_cluster_size: int = Field(default=10, ge=2, description="Largest community before Leiden splits it")
    leiden_seed: int = Field(
        default=0xDEADBEEF, description="Leiden's random seed: the same graph, the same communities"
    )
    leiden_resolution: float = Field(
        default=1.0, gt=0, description="Leiden's resolution: higher, smaller communities"
    )


class ReportSettings(BaseModel):
    """Community reports (GraphRAG: 8,000 context tokens, 2,000 words)."""

    report_max_input_tokens: int = Field(
        default=8000, ge=64, description="Context budget per report; larger communities use sub-reports"
    )
    report_context_tokens: int = Field(
        default=4000,
        ge=64,
        description="Context budget of a model-written report (standard, fast) of a community without "
        "reported children; the offline reports keep report_max_input_tokens. Chosen on MuSiQue-100 "
        "(bench/bench_report_budget.py): 4,000 holds 79% of the leaves' entities and claims, 8,000 91% "
        "at twice the tokens",
    )
    report_parent_context_tokens: int = Field(
        default=1500,
        ge=64,
        description="Context budget of a model-written report of a community with reported children: "
        "their summaries, ratings and findings' headlines, then the rows they do not cover. On "
        "MuSiQue-100 the reports hold 97.7% of their communities' entities and claims at 1,500 and 97.8% at "
        "2,000 or 3,000; past 1,500 a parent's room goes to more edges between its children",
    )
    reports: Literal["eager", "on_demand"] = Field(
        default="eager",
        description="eager: every model report is written at index time; on_demand: only the top level's "
        "(where global search starts), the deeper communities keep the extractive report until "
        "`pipeline index --reports eager` writes the model's",
    )
    report_max_words: int = Field(default=2000, ge=10, description="Report length asked of the LLM")
    report_min_entities: int = Field(
        default=10,
        ge=0,
        description="Model-written reports (standard, fast): a community without children and with fewer "
        "entities and fewer claims than this (default: max_cluster_size's default, a leaf as large as "
        "Leiden lets one grow) gets the extractive report (method 'extractive'); 0 = all. On MuSiQue-100 "
        "about 1 community in 6 gets a model report",
    )
