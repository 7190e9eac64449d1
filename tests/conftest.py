"""The fixtures test modules share, each defined once here: a real Dagster instance in a temp DAGSTER_HOME,
temp storage, the shared data folder, the sample book indexed once per session, the MiniLM embedder and the
tiny hand-built namespace, the service tests' data, service, URL and client, the web app's data and URL,
headless Chromium, and (imported from tests/support) the llama.cpp, 768-d embedding and S3 servers. Shared
helpers live in tests/support/; a test module never imports another (tests/test_suite_layout.py)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.llm_server import llm_server  # noqa: F401 - the session-scoped llama.cpp server fixture
from tests.support.minilm_http import book_768, minilm_http  # noqa: F401 - a 768-d embedding server, its index
from tests.support.s3_server import s3_bucket  # noqa: F401 - a bucket on a session-scoped moto S3 server

if TYPE_CHECKING:
    from tests.support.minilm_http import MiniLMServer
    from tests.support.service_data import ServiceData
    from tests.support.uploads_service import Served

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
    """The small hand-built Christmas Carol namespace (`tests.support.tiny_index.build_tiny_index`), as a
    NamespaceStore of the module's own (tests that change it change only their module's copy)."""
    from pipeline.io.store import NamespaceStore
    from tests.support.tiny_index import build_tiny_index

    store = NamespaceStore(tmp_path_factory.mktemp("storage"), "tiny")
    build_tiny_index(store, embedder)
    return store


@pytest.fixture(scope="module")
def service_data(tmp_path_factory: pytest.TempPathFactory) -> ServiceData:
    """The service tests' two tenants' indexed namespaces and keys file (`build_service_data`), built once for
    the module that asks (a module's tests may change them; another module's never see it)."""
    from tests.support.service_data import build_service_data

    return build_service_data(tmp_path_factory.mktemp("service"))


@pytest.fixture(scope="module")
def web_data(tmp_path_factory: pytest.TempPathFactory) -> ServiceData:
    """`service_data`'s tenants as the web app's tests serve them (`tests.support.web_data.build_web_data`:
    a layout map, a namespace holding markup, an eval report), built once for the module that asks."""
    from tests.support.web_data import build_web_data

    return build_web_data(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def app_url(web_data: ServiceData) -> Iterator[str]:
    """The web app's service (offline, warmed) over the module's `web_data`, under uvicorn: its base URL."""
    from pipeline.service.queries import QueryService
    from tests.support.service_data import offline_settings, serving

    settings = offline_settings(web_data, service_max_body_bytes=65536, service_max_evidence_items=8)
    service = QueryService(settings, embedder=web_data.embedder)
    service.warm_up()
    with serving(service) as url:
        yield url


@pytest.fixture(scope="module")
def offline_service(request: pytest.FixtureRequest, service_data: ServiceData) -> object:
    """A warmed offline QueryService over the module's `service_data`; a module's OFFLINE_SERVICE_SETTINGS
    (a dict) overrides `offline_settings`' values for that module's service."""
    from pipeline.service.queries import QueryService
    from tests.support.service_data import offline_settings

    overrides = getattr(request.module, "OFFLINE_SERVICE_SETTINGS", {})
    svc = QueryService(offline_settings(service_data, **overrides), embedder=service_data.embedder)
    svc.warm_up()
    return svc


@pytest.fixture(scope="module")
def service_url(offline_service: object) -> Iterator[str]:
    """`offline_service` under uvicorn in a thread: its base URL."""
    from tests.support.service_data import serving

    with serving(offline_service) as url:
        yield url


@pytest.fixture(scope="module")
def service_client(service_url: str) -> Iterator[object]:
    """An httpx client of `service_url`."""
    import httpx

    with httpx.Client(base_url=service_url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Headless Chromium through selenium (`tests.support.browser`), one for the module."""
    from tests.support.browser import headless_chromium

    with headless_chromium(tmp_path_factory.mktemp("chromium_profile")) as driver:
        yield driver


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, minilm_http: MiniLMServer) -> Iterator[Served]:  # noqa: F811
    """A real `graphrag-serve` whose write keys upload, replace and delete documents, each change run
    through a real Dagster instance (`tests.support.uploads_service`), one for the module that asks."""
    from tests.support.uploads_service import uploads_service

    root = tmp_path_factory.mktemp("uploads")
    with uploads_service(root, minilm_http, make_dagster_home(root / "dagster")) as found:
        yield found
