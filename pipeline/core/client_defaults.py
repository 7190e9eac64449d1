"""What a model client, its transport and the embedders do when built without settings: the settings'
own defaults (`pipeline.settings.models` reads them from here), so each is written once and a client
made by hand behaves as a configured one."""

from __future__ import annotations

REQUEST_TIMEOUT_S = 60.0  # a whole (unstreamed) reply, an embedding request
# A streamed reply's first token (the server reads the prompt first). With one retry of a timeout, a hung
# server is named within 2 x 20 s: at 300 s x 5 attempts a CLI question sat silent for 25 minutes. A GPU
# server reads a 4k-token prompt in well under a second; a CPU one reading long prompts needs more.
LLM_FIRST_TOKEN_TIMEOUT_S = 20.0
LLM_IDLE_TIMEOUT_S = 30.0  # the longest gap inside a streamed reply
MAX_RETRIES = 4  # of 429, 5xx, timeouts and dropped connections
LLM_TIMEOUT_RETRIES = 1  # of a chat call that timed out: a hung server rarely answers the third request
LLM_MAX_TOKENS = 2000  # a task's output limit when it has none of its own
LLM_MAX_OUTPUT_TOKENS = 16_384  # the ceiling a cut-off reply's doubled limit may reach
LLM_JSON_MODE = "auto"

EMBEDDING_DEVICE = "cpu"
EMBEDDING_BATCH_SIZE = 64
EMBEDDING_QUANTIZE = "none"
EMBEDDING_PRECISION = "auto"
EMBEDDING_MAX_INPUT_TOKENS = 8191  # OpenAI's embedding models' input limit
EMBEDDING_BATCH_TOKENS = 100_000
