"""Shared fixtures: a real Dagster instance in a temp DAGSTER_HOME, temp storage, the shared data folder."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.llm_server import llm_server  # noqa: F401 - the session-scoped llama.cpp server fixture
from tests.support.minilm_http import book_768, minilm_http  # noqa: F401 - a 768-d embedding server, its index
from tests.support.s3_server import s3_bucket  # noqa: F401 - a bucket on a session-scoped moto S3 server

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Kill any child process a failed test left running: multiprocessing joins its non-daemon children at
    exit, and one blocked on a dead peer would otherwise keep the run from ever ending."""
    for child in multiprocessing.active_children():
        child.kill()
        child.join(timeout=30)


def shared_data(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"test data {path} is missing: tests read ../shared/data beside the checkout")
    return path


@pytest.fixture
def storage_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "storage"
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(root))
    return root


@contextlib.contextmanager
def environment(**variables: str) -> Iterator[None]:
    """These environment variables set for the block, each given back its old value (or unset) after."""
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def make_dagster_home(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(REPO_ROOT / "dagster.yaml", path / "dagster.yaml")
    return path


@pytest.fixture(scope="module")
def dagster_instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real DagsterInstance (SQLite storage from the project's dagster.yaml) in a temp DAGSTER_HOME."""
    from dagster import DagsterInstance

    home = make_dagster_home(tmp_path_factory.mktemp("dagster_home"))
    old = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    instance = DagsterInstance.get()
    try:
        yield instance
    finally:
        instance.dispose()
        if old is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = old


@pytest.fixture(scope="session")
def sample_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """samples/demo indexed offline through the Dagster job, as `make demo` does (once per session: the
    query-mode tests only read it); returns the storage root holding namespace 'demo'."""
    from dagster import DagsterInstance

    from assets.launch import run_index

    storage = tmp_path_factory.mktemp("sample_book_storage")
    home = make_dagster_home(tmp_path_factory.mktemp("sample_book_dagster"))
    with (
        environment(PIPELINE_STORAGE_ROOT=str(storage), DAGSTER_HOME=str(home)),
        DagsterInstance.get() as instance,
    ):
        result = run_index("demo", input_dir=str(REPO_ROOT / "samples" / "demo"), instance=instance)
    assert result.success, result.failures
    return storage


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The real MiniLM embedder behind an embedding cache of the module's own."""
    from pipeline.caches.sqlite_embedding import EmbeddingCache
    from pipeline.embeddings.cached import CachedEmbedder
    from pipeline.embeddings.minilm import LocalMiniLMEmbedder

    return CachedEmbedder(LocalMiniLMEmbedder(), EmbeddingCache(tmp_path_factory.mktemp("c") / "e.sqlite"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> object:
    """The small hand-built Christmas Carol namespace (`tests.test_local_search.build_tiny_index`), as a
    NamespaceStore; test_local_search's own `tiny` also returns the document text."""
    from pipeline.io.store import NamespaceStore
    from tests.test_local_search import build_tiny_index

    store = NamespaceStore(tmp_path_factory.mktemp("storage"), "tiny")
    build_tiny_index(store, embedder)
    return store
