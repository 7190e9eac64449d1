"""What a model client, its transport and the embedders do when built without settings: the settings'
own defaults (`pipeline.settings.models` reads them from here), so each is written once and a client
made by hand behaves as a configured one."""

from __future__ import annotations

REQUEST_TIMEOUT_S = 60.0  # a whole (unstreamed) reply, an embedding request
LLM_FIRST_TOKEN_TIMEOUT_S = 300.0  # a streamed reply's first token (a long prompt's prefill)
LLM_IDLE_TIMEOUT_S = 30.0  # the longest gap inside a streamed reply
MAX_RETRIES = 4  # of 429, 5xx, timeouts and dropped connections
LLM_MAX_TOKENS = 2000  # a task's output limit when it has none of its own
LLM_MAX_OUTPUT_TOKENS = 16_384  # the ceiling a cut-off reply's doubled limit may reach
LLM_JSON_MODE = "auto"

EMBEDDING_DEVICE = "cpu"
EMBEDDING_BATCH_SIZE = 64
EMBEDDING_QUANTIZE = "none"
EMBEDDING_PRECISION = "auto"
EMBEDDING_MAX_INPUT_TOKENS = 8191  # OpenAI's embedding models' input limit
EMBEDDING_BATCH_TOKENS = 100_000
