"""`make llm-try`: the whole model path on a small bundled text with the bundled SmolLM2 server.

Starts the llama.cpp server that `make llm-server` builds (SmolLM2-135M, one thread, on a free
127.0.0.1 port), prints `pipeline index --estimate` for samples/local_model, then indexes it through
Dagster with the LLM provider, and stops the server. Storage, caches and DAGSTER_HOME live in a
temporary folder, so every try starts cold and leaves nothing behind. Exits with the index's code: a
135M model may fail units, and a run that loses most of them says so (non-zero).

The limits below keep a tiny model's try to minutes: it tends to repeat itself until max_tokens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from tests.support.llm_server import MODEL_ALIAS, LlamaServer  # noqa: E402 - after the path is set

SAMPLE = PROJECT_ROOT / "samples" / "local_model"
N_CTX = 4096  # the extraction prompt is ~1,800 tokens; its reply may take up to 2 x 600 more


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="llm-try-") as tmp:
        server = LlamaServer(Path(tmp) / "server.log", n_ctx=N_CTX).start()
        try:
            env = {
                **os.environ,
                "DAGSTER_HOME": str(Path(tmp) / "dagster_home"),
                "PIPELINE_STORAGE_ROOT": str(Path(tmp) / "storage"),
                "PIPELINE_LLM_PROVIDER": "openai",
                "PIPELINE_LLM_BASE_URL": server.base_url,
                "PIPELINE_LLM_MODEL": MODEL_ALIAS,
                "PIPELINE_LLM_JSON_MODE": "json_object",  # llama.cpp's schema-constrained output
                # one CPU thread reads a 2,000-token prompt in tens of seconds: past the 20 s default
                "PIPELINE_LLM_FIRST_TOKEN_TIMEOUT_S": "300",
                "PIPELINE_LLM_EXTRACTION_MAX_TOKENS": "300",
                "PIPELINE_LLM_REPORT_MAX_TOKENS": "400",
                "PIPELINE_LLM_DESCRIPTION_MAX_TOKENS": "200",
                "PIPELINE_LLM_MAX_OUTPUT_TOKENS": "600",
                "PIPELINE_EXTRACTION_MAX_GLEANINGS": "0",
                "PIPELINE_EXTRACT_CLAIMS": "false",
                "PIPELINE_REPORT_MAX_INPUT_TOKENS": "2000",
            }
            index = [sys.executable, "-m", "assets", "index", "--namespace", "try", "--input", str(SAMPLE)]
            print(f"== llama.cpp server with {MODEL_ALIAS} at {server.base_url} (n_ctx {N_CTX}) ==")
            print("== what the run will ask of the model ==", flush=True)
            estimate = subprocess.run([*index, "--estimate"], env=env, cwd=PROJECT_ROOT)
            if estimate.returncode != 0:
                return estimate.returncode
            print("\n== the run ==", flush=True)
            return subprocess.run(index, env=env, cwd=PROJECT_ROOT).returncode
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
