"""The web app's documents view in a real browser (issue 70): headless Chromium (selenium) against a real
`graphrag-serve` whose changes run `pipeline index` through a real Dagster instance (conftest's `served`,
`tests/support/uploads_service.py`), embedding through the real MiniLM behind HTTP.

A write key's page uploads two text files and an encrypted PDF through the file input in one batch
(after a refused type, refused with the server's reason), watches the run in the progress panel stage by
stage (held at its first embeddings request, the panel shows the run in flight and the table `parsing`)
until the table says `indexed` (the PDF `failed`, `encrypted`, with its retry buttons), sorts and filters
the table, opens a chunk in the document view, and deletes a file through the confirmation dialog:
`deleted` at once, and the delete's run followed to its end in the history. A read-only key's page shows
no control that changes anything. Two index runs in all.

With PIPELINE_SCREENSHOTS=<folder> it keeps the view at 1280 and 390 px (docs/screenshots/web_documents_*).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.browser import screenshot
from tests.support.documents import encrypted_pdf
from tests.support.uploads_service import HANG_GUARD_S, READER, WRITER, Served
from tests.support.web_page import signed_in

LAPTOP, PHONE = (1280, 1000), (390, 844)
NAMESPACE = "web-docs"
# The elements reaching past the screen's right edge whose parent does not, for a failed check to name (an
# element inside a scrolling box is clipped by it, unless it is positioned outside it).
WIDER = """const W = window.innerWidth + 0.5;
return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > W &&
  e.parentElement.getBoundingClientRect().right <= W).map((e) => `${e.tagName}#${e.id}.${e.className}`);"""
HARBOUR = "The harbour master of Vigo, Marta Sousa, counts the fishing boats every morning at dawn. " * 5
SALT = "The salt guild of Porto keeps its ledger in a brass box beside the customs house. " * 5


@pytest.fixture(scope="module")
def namespace(served: Served) -> str:
    created = served.client(WRITER).post("/v1/namespaces", json={"namespace": NAMESPACE})
    assert created.status_code == 201, created.text
    return NAMESPACE


@pytest.fixture
def page(browser: WebDriver) -> Iterator[WebDriver]:
    browser.set_window_size(*LAPTOP)
    try:
        yield browser
    finally:
        browser.set_window_size(*LAPTOP)


def _wait(browser: WebDriver, until, timeout: float = HANG_GUARD_S):  # noqa: ANN001, ANN202
    # The table is drawn again on each of the run's events: an element read just before that is stale,
    # and the next poll reads the new one.
    stale = (StaleElementReferenceException,)
    return WebDriverWait(browser, timeout, poll_frequency=0.2, ignored_exceptions=stale).until(until)


def _choose(browser: WebDriver, namespace: str) -> None:
    Select(browser.find_element(By.ID, "namespace")).select_by_value(namespace)
    _wait(browser, lambda d: d.find_element(By.ID, "documents-section").is_displayed(), 60)


def _statuses(browser: WebDriver) -> dict[str, str]:
    """Each row's name and status, read in one script: one drawing of the table, never half of two."""
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#documents tbody tr')]"
        ".map(r => [r.querySelector('td').textContent.trim(), r.dataset.status]);"
    )
    return dict(rows)


def _row(browser: WebDriver, name: str):  # noqa: ANN202
    """The row of document `name`, found in one lookup (a row read cell by cell can be redrawn between)."""
    found = browser.find_elements(
        By.XPATH, f"//*[@id='documents']//tbody/tr[normalize-space(td[1])='{name}']"
    )
    if not found:
        raise AssertionError(f"no row {name!r}: {_statuses(browser)}")
    return found[0]


def _progress(browser: WebDriver) -> str | None:
    panel = browser.find_element(By.ID, "run-progress")
    return panel.get_attribute("data-state") if panel.is_displayed() else None


def _shot(browser: WebDriver, name: str, width: int, height: int, target: str = "documents-section") -> None:
    """The view from element `target` down at `width` px (kept with PIPELINE_SCREENSHOTS), nothing wider
    than the screen."""
    browser.set_window_size(width, height)
    assert browser.execute_script("return window.innerWidth") == width
    browser.execute_script(f"document.getElementById('{target}').scrollIntoView({{block: 'start'}})")
    overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, (name, overflow, browser.execute_script(WIDER))
    screenshot(browser, name)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_a_write_key_uploads_watches_the_run_opens_a_chunk_and_deletes_through_the_page(
    page: WebDriver, served: Served, namespace: str, tmp_path: Path
) -> None:
    files = {"harbour.txt": HARBOUR, "salt.txt": SALT}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "tool.exe").write_bytes(b"MZ" + bytes(64))
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf())  # fails at parse, in the same run
    uploaded = [*files, "locked.pdf"]
    signed_in(page, served.url, WRITER)
    _choose(page, namespace)
    assert page.find_element(By.ID, "documents-changes").is_displayed()
    assert not page.find_elements(By.CSS_SELECTOR, "#documents tbody tr")

    picker = page.find_element(By.ID, "documents-file")
    picker.send_keys(str(tmp_path / "tool.exe"))  # refused whole, with the server's reason; no run
    refused = _wait(
        page, lambda d: d.find_elements(By.CSS_SELECTOR, "#upload-outcomes li[data-outcome='refused']")
    )
    assert "tool.exe" in refused[0].text and "unsupported_type" in refused[0].text, refused[0].text
    assert not page.find_element(By.ID, "run-progress").is_displayed()

    held = served.embedder.hold()["held"]  # the run waits at its first embeddings request until released
    try:
        picker.send_keys("\n".join(str(tmp_path / n) for n in uploaded))  # several files in one batch
        queued = _wait(
            page, lambda d: d.find_elements(By.CSS_SELECTOR, "#upload-outcomes li[data-outcome='queued']")
        )
        assert sorted(li.find_element(By.TAG_NAME, "strong").text for li in queued) == sorted(uploaded)
        served.embedder.wait_held(held + 1)
        # In flight: the panel shows the stages so far and the table says `parsing`.
        _wait(page, lambda d: _progress(d) == "running" and set(_statuses(d).values()) == {"parsing"})
        stages = page.find_elements(By.CSS_SELECTOR, "#run-progress .run-stages li")
        assert stages and stages[-1].get_attribute("data-state") == "running", [s.text for s in stages]
        _shot(page, "web_documents_progress_390.png", *PHONE, target="run-progress")
        _shot(page, "web_documents_progress_1280.png", *LAPTOP)
    finally:
        served.embedder.release()

    _wait(page, lambda d: _progress(d) in ("succeeded", "failed"))
    state = page.find_element(By.CSS_SELECTOR, "#run-progress .run-state").text
    assert _progress(page) == "succeeded" and state.startswith("Run succeeded in "), state
    stages = page.find_elements(By.CSS_SELECTOR, "#run-progress .run-stages li")
    names = [s.get_attribute("data-stage") for s in stages]
    assert names[0] == "input_documents" and "index_version" in names, names
    assert {s.get_attribute("data-state") for s in stages} == {"done"}
    assert all(re.search(r"\d+\.\d s$", s.find_element(By.CLASS_NAME, "stage-time").text) for s in stages)
    expected = {**dict.fromkeys(files, "indexed"), "locked.pdf": "failed"}
    _wait(page, lambda d: _statuses(d) == expected)  # the table read again
    locked = _row(page, "locked.pdf")
    assert locked.find_element(By.CSS_SELECTOR, "td[data-label='reason']").text == "encrypted"
    assert locked.find_elements(By.CSS_SELECTOR, "button[data-action='retry']")  # retry one, or all:
    assert page.find_element(By.ID, "documents-retry-all").is_displayed()
    runs = "#runs tbody tr"  # read again once the run has ended
    _wait(
        page,
        lambda d: (
            [r.get_attribute("data-status") for r in d.find_elements(By.CSS_SELECTOR, runs)] == ["succeeded"]
        ),
    )
    history = page.find_elements(By.CSS_SELECTOR, runs)
    cells = [c.text for c in history[0].find_elements(By.TAG_NAME, "td")]
    assert cells[1] == "succeeded" and cells[3] == "3" and cells[4] == "0", cells  # 3 documents, no model

    # Sorted by size (salt's text is the shorter) and back; filtered by status with its count.
    def texts() -> list[str]:
        return [n for n in _statuses(page) if n.endswith(".txt")]

    page.find_element(By.CSS_SELECTOR, "#documents th button[data-key='size']").click()
    assert texts() == ["salt.txt", "harbour.txt"]
    page.find_element(By.CSS_SELECTOR, "#documents th button[data-key='size']").click()
    assert texts() == ["harbour.txt", "salt.txt"]
    page.find_element(By.CSS_SELECTOR, "#documents-filter button[data-status='failed']").click()
    assert _statuses(page) == {"locked.pdf": "failed"}
    page.find_element(By.CSS_SELECTOR, "#documents-filter button[data-status='all']").click()
    assert (
        page.find_element(By.CSS_SELECTOR, "#documents-filter button[data-status='indexed']").text
        == "indexed (2)"
    )

    # A chunk of harbour.txt opens its passage in the document view.
    _row(page, "harbour.txt").find_element(By.CSS_SELECTOR, "button[data-action='chunks']").click()
    _wait(page, lambda d: d.find_element(By.ID, "chunks-panel").get_attribute("data-ready"), 60)
    chunk = page.find_elements(By.CSS_SELECTOR, "#chunks li.chunk")[0]
    passage = _flat(chunk.find_element(By.CLASS_NAME, "passage").text)
    assert "harbour master of Vigo" in passage
    chunk.find_element(By.CSS_SELECTOR, "button.open-chunk").click()
    mark = _wait(page, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open] #document-text .span"), 60)
    assert passage[:60] in _flat(mark.text), (passage, mark.text)
    assert page.find_element(By.ID, "document-title").text == "harbour.txt"
    page.find_element(By.ID, "document-close").click()
    page.find_element(By.ID, "chunks-close").click()

    # Delete, behind the confirmation: cancelled first (nothing happens), then confirmed.
    _row(page, "harbour.txt").find_element(By.CSS_SELECTOR, "button[data-action='delete']").click()
    _wait(page, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, 30)
    assert page.find_element(By.ID, "confirm-title").text == "Delete harbour.txt?"
    page.find_element(By.ID, "confirm-cancel").click()
    assert page.find_element(By.ID, "confirm").get_attribute("open") is None
    assert _statuses(page)["harbour.txt"] == "indexed"
    _row(page, "harbour.txt").find_element(By.CSS_SELECTOR, "button[data-action='delete']").click()
    _wait(page, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, 30)
    page.find_element(By.ID, "confirm-ok").click()
    _wait(page, lambda d: _statuses(d).get("harbour.txt") == "deleted", 60)
    assert not _row(page, "harbour.txt").find_elements(By.CSS_SELECTOR, "button[data-action]")
    # The delete's run, followed to its end: the history has both runs, the newest first.
    _wait(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 2)
    _wait(page, lambda d: _progress(d) in ("succeeded", "failed"))
    newest = page.find_element(By.CSS_SELECTOR, "#runs tbody tr").get_attribute("data-run")
    _wait(
        page,
        lambda d: (
            d.find_element(By.CSS_SELECTOR, "#runs tbody tr").get_attribute("data-status") == "succeeded"
        ),
    )
    assert page.find_element(By.ID, "run-progress").get_attribute("data-run") == newest
    assert _statuses(page) == {"harbour.txt": "deleted", "salt.txt": "indexed", "locked.pdf": "failed"}
    listed = served.client(WRITER).get(f"/v1/namespaces/{namespace}/documents").json()["documents"]
    assert {d["name"]: (d["status"], d.get("removed")) for d in listed}["harbour.txt"] == ("deleted", True)
    assert page.find_element(By.ID, "documents-caption").text.startswith("1 indexed · 1 failed · 1 deleted")
    _shot(page, "web_documents_390.png", *PHONE)
    _shot(page, "web_documents_1280.png", LAPTOP[0], 1500)  # tall enough for the run history
    page.set_window_size(*LAPTOP)

    # A namespace made from the page's form is listed, chosen, and offered for uploads.
    page.find_element(By.CSS_SELECTOR, "#new-namespace summary").click()
    page.find_element(By.ID, "new-namespace-name").send_keys("web-made")
    page.find_element(By.CSS_SELECTOR, "#new-namespace-form button[type='submit']").click()
    _wait(
        page,
        lambda d: (
            Select(d.find_element(By.ID, "namespace")).first_selected_option.get_attribute("value")
            == "web-made"
        ),
        60,
    )
    _wait(page, lambda d: d.find_element(By.ID, "documents-changes").is_displayed(), 60)
    assert page.find_element(By.ID, "new-namespace-status").text == "Created web-made."


def test_a_read_only_keys_page_shows_nothing_that_changes_documents(
    page: WebDriver, served: Served, namespace: str
) -> None:
    signed_in(page, served.url, READER)
    Select(page.find_element(By.ID, "namespace")).select_by_value(namespace)
    listed = page.execute_async_script(
        "const done = arguments[1];"
        "window.graphrag.get(`/v1/namespaces/${arguments[0]}/documents`).then(done, (e) => done(String(e)));",
        namespace,
    )
    assert listed["writable"] is False, listed
    if listed["documents"]:  # the documents the write key's test left: shown, but not to be changed
        _wait(
            page,
            lambda d: (
                len(d.find_elements(By.CSS_SELECTOR, "#documents tbody tr")) == len(listed["documents"])
            ),
            60,
        )
    else:  # run alone: an empty namespace the key may not fill is not shown at all
        assert not page.find_element(By.ID, "documents-section").is_displayed()
    for hidden in ("documents-changes", "documents-file", "documents-retry-all"):
        assert not page.find_element(By.ID, hidden).is_displayed(), hidden
    changes = ", ".join(f"#documents button[data-action='{a}']" for a in ("delete", "replace", "retry"))
    assert page.find_elements(By.CSS_SELECTOR, changes) == []
    # The page cannot know whether a key may create namespaces: the server's 403 is said politely.
    page.find_element(By.CSS_SELECTOR, "#new-namespace summary").click()
    page.find_element(By.ID, "new-namespace-name").send_keys("reader-made")
    page.find_element(By.CSS_SELECTOR, "#new-namespace-form button[type='submit']").click()
    said = _wait(page, lambda d: d.find_element(By.ID, "new-namespace-status").text, 30)
    assert said == "This key may not create namespaces: that takes a key with write: true.", said
