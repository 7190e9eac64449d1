"""The web app in a real browser: `graphrag-serve`'s app (uvicorn on 127.0.0.1, real indexes) driven by
headless Chromium through selenium (`make test` installs both), two tenants in its keys file.

Signed in with acme's key, the page asks the demo's question, and the answer grows on screen as its
`delta` events arrive (the page records the answer's shown length after each one); a citation marker
opens its source with the cited sentence highlighted. Globex's namespace is neither listed nor readable
through the page's own API calls. A document holding `<script>` and `<img onerror>` shows as text.
"""

from __future__ import annotations

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from pipeline.service.queries import QueryService
from tests.support.browser import screenshot
from tests.support.service_data import offline_settings, serving
from tests.support.web_data import IMG, KEY_A, MARKUP, QUESTION, SCRIPT
from tests.support.web_page import ask, signed_in


def _no_alert(browser: WebDriver) -> None:
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert  # noqa: B018 - the property raises when there is none


def test_the_answer_streams_and_a_citation_opens_its_highlighted_span(browser, app_url) -> None:
    signed_in(browser, app_url)
    options = [o.get_attribute("value") for o in Select(browser.find_element(By.ID, "namespace")).options]
    assert options == ["acme", "acme-empty", MARKUP]
    assert Select(browser.find_element(By.ID, "mode")).first_selected_option.text == "auto"
    status = browser.find_element(By.ID, "ns-status").text
    assert "tables" in status and "last run" in status and "method" in status
    ask(browser, "acme", None, QUESTION)

    answer = browser.find_element(By.ID, "answer")
    lengths = [int(n) for n in answer.get_attribute("data-lengths").split(",")]
    # One shown length per delta event, each longer than the one before: the answer grew on screen.
    assert int(answer.get_attribute("data-deltas")) == len(lengths) >= 2
    assert all(a < b for a, b in zip(lengths, lengths[1:], strict=False)), lengths
    assert lengths[-1] == len(answer.text) or lengths[-1] >= len(answer.text.strip())
    route = browser.find_element(By.ID, "route").text
    assert route.startswith("auto → ") and ":" in route  # the routed mode and why
    assert browser.find_elements(By.CSS_SELECTOR, "#context tbody tr")  # what the answer read

    markers = answer.find_elements(By.CSS_SELECTOR, "button.cite")
    assert markers, answer.text
    markers[0].click()
    marker = markers[0].get_attribute("data-marker")
    card = WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#source-{marker}[data-loaded='true']")
    )
    assert "selected" in card.get_attribute("class")
    mark = card.find_element(By.CSS_SELECTOR, ".passage mark")
    assert len(mark.text) > 12 and mark.text in card.find_element(By.CSS_SELECTOR, ".passage").text
    assert mark.text in answer.text  # the sentence the answer quoted, found in its passage
    where = card.find_element(By.CSS_SELECTOR, ".where").text
    assert "carol.txt" in where and "p. " in where and "Stave" in where  # page and section, from the layout
    screenshot(browser, "web_app_answer.png")

    card.find_element(By.CSS_SELECTOR, "button.open-document").click()
    dialog = WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open] #document-text mark")
    )
    assert dialog.text == mark.text or mark.text in dialog.text
    browser.find_element(By.ID, "document-close").click()

    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "entities").get_attribute("data-ready"))
    chips = browser.find_elements(By.CSS_SELECTOR, "#entities button.chip")
    assert chips, "the answer's entities"
    chips[0].click()
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.ID, "graph").get_attribute("data-drawn") == "true"
    )
    assert int(browser.find_element(By.ID, "graph").get_attribute("data-nodes")) >= 2
    screenshot(browser, "web_app_graph.png")
    # the namespace's `pipeline eval` report
    assert "basic" in browser.find_element(By.ID, "eval").text
    _no_alert(browser)


def test_another_tenants_namespace_is_neither_listed_nor_answerable(browser, app_url) -> None:
    signed_in(browser, app_url)
    options = [o.get_attribute("value") for o in Select(browser.find_element(By.ID, "namespace")).options]
    assert "globex" not in options
    assert KEY_A not in browser.current_url
    # the key is in the tab's session storage only: the conversation kept in localStorage names a hash of it
    assert KEY_A not in browser.execute_script("return JSON.stringify(Object.entries(localStorage))")
    statuses = browser.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        const key = sessionStorage.getItem("graphrag.key");
        const calls = [
          ["GET", "/v1/namespaces/globex/status"],
          ["GET", "/v1/namespaces/globex/documents/doc-globex"],
          ["GET", "/v1/namespaces/globex/entities/Bob%20Cratchit/neighbourhood"],
          ["GET", "/v1/namespaces/globex/eval"],
          ["POST", "/v1/query/local", {namespace: "globex", question: "Who is Scrooge?"}],
          ["POST", "/v1/query/basic", {namespace: "globex", question: "Who is Scrooge?", stream: true}],
          ["POST", "/v1/estimate/local", {namespace: "globex", question: "Who is Scrooge?"}],
        ];
        (async () => {
          const statuses = [];
          for (const [method, path, body] of calls) {  // one at a time: the key's limit is 2 here
            const r = await fetch(path, {
              method, body: body && JSON.stringify(body),
              headers: {Authorization: "Bearer " + key, "Content-Type": "application/json",
                        Accept: "text/event-stream"},
            });
            statuses.push(r.status);
          }
          return statuses;
        })().then(done);
        """
    )
    assert statuses == [403] * 7
    # the page's own helper, with the signed-in key, can read its own namespace
    own = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.graphrag.get('/v1/namespaces/acme/status').then(s => done(s.namespace), e => done(e.status));"
    )
    assert own == "acme"


def test_a_document_holding_markup_renders_as_text(browser, app_url) -> None:
    signed_in(browser, app_url)
    browser.execute_script("window.__pwned = undefined")
    ask(browser, MARKUP, "basic", QUESTION)
    answer = browser.find_element(By.ID, "answer")
    for marker in answer.find_elements(By.CSS_SELECTOR, "button.cite"):
        marker.click()
        number = marker.get_attribute("data-marker")
        WebDriverWait(browser, 30).until(
            lambda d, n=number: d.find_element(By.CSS_SELECTOR, f"#source-{n}[data-loaded='true']")
        )
    shown = browser.find_element(By.ID, "sources").text + answer.text
    shown += browser.find_element(By.ID, "context").get_attribute("textContent")
    assert SCRIPT in shown and IMG in shown  # the characters, as the document has them
    created = browser.execute_script(
        "return document.querySelectorAll('main script, main img, dialog script, dialog img').length"
    )
    assert created == 0
    assert browser.execute_script("return window.__pwned === undefined")
    _no_alert(browser)


def test_the_namespace_panel_lists_its_documents_and_their_status(browser, app_url, web_data) -> None:
    from pipeline.core import schema
    from pipeline.io.store import NamespaceStore

    signed_in(browser, app_url)
    Select(browser.find_element(By.ID, "namespace")).select_by_value("acme")
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "documents-section").is_displayed())
    rows = browser.find_elements(By.CSS_SELECTOR, "#documents tbody tr")
    titles = NamespaceStore(web_data.storage_root, "acme").read_table(schema.DOCUMENTS).column("title")
    assert sorted(r.find_element(By.CSS_SELECTOR, "td").text for r in rows) == sorted(titles.to_pylist())
    assert {r.get_attribute("data-status") for r in rows} == {"indexed"}
    assert browser.find_element(By.ID, "documents-caption").text.startswith(f"{len(rows)} indexed")
    _no_alert(browser)


def test_the_page_fits_a_phones_width(browser, app_url) -> None:
    browser.set_window_size(390, 844)
    try:
        signed_in(browser, app_url)
        ask(browser, "acme", None, QUESTION)
        overflow = browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        screenshot(browser, "web_app_phone.png")
    finally:
        browser.set_window_size(1600, 1000)


def test_cancel_aborts_the_request_and_says_so(browser, app_url) -> None:
    signed_in(browser, app_url)
    Select(browser.find_element(By.ID, "namespace")).select_by_value("acme")
    browser.find_element(By.ID, "question").send_keys(QUESTION)
    # Sent and cancelled in one script, before any answer can arrive: the page aborts its fetch (the
    # server's side of a client leaving is tests/test_service_stream.py's).
    browser.execute_script(
        "document.getElementById('ask').requestSubmit(); document.getElementById('cancel').click();"
    )
    WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.ID, "answer").get_attribute("data-state") == "cancelled"
    )
    assert browser.find_element(By.ID, "answer-status").text == "Cancelled."
    assert browser.find_element(By.ID, "send").is_enabled()
    assert not browser.find_element(By.ID, "cancel").is_enabled()


def test_with_a_model_configured_the_cost_estimate_shows_before_sending(browser, web_data) -> None:
    settings = offline_settings(web_data, llm_provider="openai", llm_model="gpt-4o-mini")
    with serving(QueryService(settings, embedder=web_data.embedder)) as url:
        signed_in(browser, url)
        Select(browser.find_element(By.ID, "namespace")).select_by_value("acme")
        browser.find_element(By.ID, "question").send_keys(QUESTION)  # typed, not sent; mode auto
        shown = WebDriverWait(browser, 60, poll_frequency=0.2).until(
            lambda d: d.find_element(By.ID, "estimate").text
        )
        assert shown.startswith("Estimate: at most ") and "gpt-4o-mini" in shown and "$" in shown
        assert "if routed to " in shown  # auto's: the dearest of the modes it may route to
        assert browser.find_element(By.ID, "answer").get_attribute("data-state") == "idle"  # nothing asked
