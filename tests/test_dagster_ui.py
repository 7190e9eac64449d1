"""The Dagster UI in a real browser: `dagster dev` on 127.0.0.1 (webserver + daemon, temp DAGSTER_HOME)
driven by headless Chromium through selenium and /usr/bin/chromedriver (`make test` installs both).

The asset graph lists the indexing chain; one namespace is materialized (launched through the
webserver's GraphQL API, as the UI's "Materialize" button does, and dequeued by the daemon) and the
run's page shows it succeeded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from deploy.local_cluster import free_port
from tests.conftest import REPO_ROOT, make_dagster_home
from tests.support.browser import CHROMEDRIVER, CHROMIUM, screenshot

LOCATION = "graphrag"  # workspace.yaml
NAMESPACE = "uitest"
CHAIN = [
    "input_documents",
    "base_text_units",
    "documents",
    "text_unit_embeddings",
    "extracted_graph",
    "entities",
    "relationships",
    "claims",
    "text_units",
    "communities",
    "community_reports",
    "report_embeddings",
]


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        data = json.loads(response.read())
    assert "errors" not in data, data["errors"]
    return data["data"]


def _wait(predicate, timeout: float, what: str, interval: float = 1.0):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except OSError as exc:  # the server is still starting
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not Path(binary).exists():
            raise FileNotFoundError(f"{binary} is missing: `make test` installs chromium and chromium-driver")
    tmp = tmp_path_factory.mktemp("ui")
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "curie.txt").write_text("Marie Curie discovered polonium in Paris with Pierre Curie.\n")
    (docs / "babbage.txt").write_text("Ada Lovelace wrote a program for Charles Babbage in London.\n")
    port = free_port()
    env = {
        **os.environ,
        "DAGSTER_HOME": str(make_dagster_home(tmp / "dagster_home")),
        "PIPELINE_STORAGE_ROOT": str(tmp / "storage"),
        "PIPELINE_INPUT_ROOT": str(tmp / "input_root"),  # empty: the sensor launches nothing of its own
    }
    dagster = shutil.which("dagster", path=str(REPO_ROOT / ".venv" / "bin")) or "dagster"
    log = (tmp / "dagster_dev.log").open("wb")
    # `dagster dev` ignores SIGTERM when started from a non-interactive shell unless the default
    # dispositions are restored; its own process group so the stop below reaches nothing else.
    proc = subprocess.Popen(
        [
            "env",
            "--default-signal=INT,TERM",
            dagster,
            "dev",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-w",
            "workspace.yaml",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(
            lambda: urllib.request.urlopen(f"{base}/server_info", timeout=5).status == 200, 600, "webserver"
        )
        query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }"
        _wait(
            lambda: any(
                e["name"] == LOCATION and e["loadStatus"] == "LOADED"
                for e in _graphql(base, query)["workspaceOrError"]["locationEntries"]
            ),
            600,  # a guard against a hang: loading the code location takes a minute on a loaded machine
            "code location",
        )
        yield {"base": base, "docs": docs, "log": tmp / "dagster_dev.log"}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this test started, nothing else
            proc.wait(timeout=30)
        log.close()


def _body_text(driver: webdriver.Chrome) -> str:
    return driver.find_element(By.TAG_NAME, "body").text


def _shown(name: str, lines: list[str]) -> bool:
    """The graph draws long names shortened with an ellipsis in the middle ("text_u…_embeddings")."""
    for line in lines:
        if line == name:
            return True
        head, sep, tail = line.partition("…")
        if sep and name.startswith(head) and name.endswith(tail) and len(head) + len(tail) < len(name):
            return True
    return False


def test_asset_graph_lists_the_indexing_chain(dagster_dev, browser) -> None:
    browser.get(f"{dagster_dev['base']}/locations/{LOCATION}/asset-groups/indexing")  # lineage graph
    WebDriverWait(browser, 90, poll_frequency=1).until(
        lambda d: all(_shown(a, _body_text(d).splitlines()) for a in CHAIN)
    )
    lines = _body_text(browser).splitlines()
    assert "Lineage" in lines and "Materialize all…" in lines
    assert [a for a in CHAIN if not _shown(a, lines)] == []
    assert "global_map_batches" in lines  # the query assets hang off the chain


def test_materializing_one_namespace_succeeds(dagster_dev, browser) -> None:
    base = dagster_dev["base"]
    repo = {"repositoryLocationName": LOCATION, "repositoryName": "__repository__"}
    added = _graphql(
        base,
        """mutation($repo: RepositorySelector!, $key: String!) {
             addDynamicPartition(repositorySelector: $repo, partitionsDefName: "namespace", partitionKey: $key) {
               __typename ... on PythonError { message } } }""",
        {"repo": repo, "key": NAMESPACE},
    )["addDynamicPartition"]
    assert added["__typename"] == "AddDynamicPartitionSuccess", added
    params = {
        "selector": {**repo, "jobName": "index_namespace"},
        "runConfigData": {
            "ops": {"input_documents": {"config": {"input_dir": str(dagster_dev["docs"])}}},
            "execution": {"config": {"in_process": {}}},  # one process: MiniLM loads once on 2 cores
        },
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": NAMESPACE}]},
    }
    launched = _graphql(
        base,
        """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) {
             __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
             ... on RunConfigValidationInvalid { errors { message } } } }""",
        {"p": params},
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    status_query = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"

    def finished() -> str | None:
        status = _graphql(base, status_query, {"id": run_id})["runOrError"]["status"]
        return status if status in {"SUCCESS", "FAILURE", "CANCELED"} else None

    status = _wait(finished, 900, f"run {run_id}", interval=2)  # a hang guard, not a speed bound
    assert status == "SUCCESS", dagster_dev["log"].read_text()[-3000:]

    browser.get(f"{base}/runs/{run_id}")
    WebDriverWait(browser, 60, poll_frequency=1).until(lambda d: "Success" in _body_text(d))
    text = _body_text(browser)
    assert "Success" in text and NAMESPACE in text
    browser.get(f"{base}/assets/community_reports?partition={NAMESPACE}")
    WebDriverWait(browser, 60, poll_frequency=1).until(lambda d: "Latest materialization" in _body_text(d))
    lines = _body_text(browser).splitlines()
    assert NAMESPACE in lines  # the partition that was just materialized
    assert {"rows", "llm_calls", "llm_cost_usd", "duration_s", "generated", "reused"} <= set(lines)


def test_an_asset_page_shows_its_row_count_and_column_schema(dagster_dev, browser) -> None:
    # after test_materializing_one_namespace_succeeds: text_units of NAMESPACE is materialized
    browser.get(f"{dagster_dev['base']}/assets/text_units?partition={NAMESPACE}")
    columns = ["human_readable_id", "n_tokens", "document_id", "start_char", "end_char", "chunk_index"]
    WebDriverWait(browser, 90, poll_frequency=1).until(
        lambda d: all(c in _body_text(d).splitlines() for c in columns)
    )
    text = _body_text(browser)
    lines = text.splitlines()
    assert "Row count" in lines or "dagster/row_count" in lines, text[:3000]
    assert "int64" in lines and "string" in lines  # each column's type from pipeline/core/schema.py
    screenshot(browser, "i34_ui_asset_text_units.png")
