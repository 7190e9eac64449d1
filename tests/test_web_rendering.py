"""Every mode rendered as a person reads it, in headless Chromium against the real service (conftest's
`app_url` over `web_data`): vector and chunks hits as cards; a report citation opening the report with
its passages; answers as rendered Markdown with no raw `**` or citation block at any point of a stream;
DRIFT's tree and auto's route as structure; "(shortened)" said plainly; the eval table in words; and at
390 px nothing wider than the screen. The report endpoint the page reads is checked over HTTP too.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import screenshot
from tests.support.service_data import auth
from tests.support.tiny_index import REPORTS
from tests.support.web_data import KEY_A, KEY_B, MARKUP, QUESTION
from tests.support.web_page import ask, signed_in

LAPTOP, PHONE = (1280, 900), (390, 844)
# Records the answer's shown text after every render (each delta, retract and citation re-renders it),
# synchronously, so no intermediate state of a stream goes unseen.
RECORD = """
const answer = document.getElementById('answer');
window.__seen = [];
const replace = answer.replaceChildren.bind(answer);
answer.replaceChildren = (...nodes) => { replace(...nodes); window.__seen.push(answer.innerText); };
"""


@pytest.fixture(scope="module")
def page(browser: WebDriver, app_url: str) -> Iterator[WebDriver]:
    """The browser signed in as acme, at laptop width (a test that narrows it restores it)."""
    browser.set_window_size(*LAPTOP)
    signed_in(browser, app_url)
    yield browser


@pytest.fixture
def phone(page: WebDriver) -> Iterator[WebDriver]:
    page.set_window_size(*PHONE)
    assert page.execute_script("return window.innerWidth") == PHONE[0]
    try:
        yield page
    finally:
        page.set_window_size(*LAPTOP)


def _fits(browser: WebDriver) -> None:
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= browser.execute_script("return window.innerWidth"), width


def _hits(browser: WebDriver, mode: str, query: str) -> list:
    ask(browser, "acme", mode, query)
    WebDriverWait(browser, 60).until(lambda d: d.find_element(By.ID, "hits").get_attribute("data-ready"))
    return browser.find_elements(By.CSS_SELECTOR, "#hits li.hit")


def _open_report(browser: WebDriver) -> object:
    ask(browser, "acme", "global", "What is Scrooge's business world like?")
    marker = browser.find_element(By.CSS_SELECTOR, "#answer button.cite")
    marker.click()
    number = marker.get_attribute("data-marker")
    return WebDriverWait(browser, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#source-{number}[data-loaded='true']")
    )


def test_vector_and_chunks_hits_show_as_cards(page: WebDriver) -> None:
    for mode, query in (("vector", "Marley had been dead seven years."), ("chunks", "Who is Marley?")):
        cards = _hits(page, mode, query)
        assert len(cards) >= 2, mode
        first = cards[0]
        assert first.find_element(By.CSS_SELECTOR, "h3").text == "1. carol.txt"
        assert float(first.find_element(By.CSS_SELECTOR, ".score").text) > 0
        where = first.find_element(By.CSS_SELECTOR, ".where").text
        assert "p. 1" in where and "Stave One" in where and "characters 0–110" in where  # read per hit
        assert "Marley" in first.find_element(By.CSS_SELECTOR, ".passage mark").text  # the matched sentence
        assert "found" in page.find_element(By.ID, "answer-status").text
    screenshot(page, "web_app_hits_1280.png")


def test_a_report_citation_opens_the_report_and_its_passages(page: WebDriver) -> None:
    card = _open_report(page)
    title, summary = REPORTS[2]
    assert card.find_element(By.CSS_SELECTOR, "h3").text.endswith(title)
    report = card.find_element(By.CSS_SELECTOR, ".report")
    assert summary in report.text
    assert "rating 1.0 of 10" in card.find_element(By.CSS_SELECTOR, ".where").text
    links = report.find_elements(By.CSS_SELECTOR, ".report-passages button.link")
    assert links and "carol.txt" in links[0].text and "p. 1" in links[0].text
    screenshot(page, "web_app_report_1280.png")
    links[0].click()
    WebDriverWait(page, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open] #document-text mark")
    )
    assert page.find_element(By.ID, "document-where").text
    page.find_element(By.ID, "document-close").click()


def test_no_raw_markdown_or_citation_block_shows_at_any_point_of_a_stream(page: WebDriver) -> None:
    for mode, question in (
        ("global", "What is Scrooge's business world like?"),
        ("local", QUESTION),
        ("drift", QUESTION),
    ):
        page.execute_script(RECORD)
        ask(page, "acme", mode, question)
        seen = page.execute_script("return window.__seen")
        deltas = int(page.find_element(By.ID, "answer").get_attribute("data-deltas"))
        assert len(seen) > deltas >= 2, mode
        for shown in seen:
            assert "**" not in shown and "[Data:" not in shown and "[Communit" not in shown, (mode, shown)
        assert page.find_elements(By.CSS_SELECTOR, "#answer button.cite"), mode
        if mode == "global":
            assert page.find_elements(By.CSS_SELECTOR, "#answer strong")  # its bold, rendered


def test_a_stream_cut_anywhere_shows_no_half_written_markup(page: WebDriver) -> None:
    # What a model streaming token by token may stop at: every prefix of an answer, rendered as the page
    # renders a stream that has reached it.
    shown = page.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        import("/app/markdown.js").then(({ readable, renderMarkdown }) => {
          const text = "Scrooge **kept the counting-house** with `Marley` [Data: Sources (1, 2); Reports (7)].\\n" +
            "- **Bob** was his clerk [Communities: 3, +more] and *poor* [2].";
          const out = [];
          for (let n = 1; n <= text.length; n++) {
            const box = document.createElement("div");
            box.append(renderMarkdown(readable(text.slice(0, n)), (b) => b.keys.map((k) => `<${k}>`)));
            out.push(box.textContent);
          }
          done(out);
        });
        """
    )
    assert len(shown) > 100
    for text in shown:
        assert "*" not in text and "`" not in text and "[Data" not in text and "[Comm" not in text, text
    assert (
        "<sources:1><sources:2><reports:7>" in shown[-1]
        and "<reports:3>" in shown[-1]
        and "<#2>" in shown[-1]
    )


def test_drifts_tree_and_autos_route_are_structure(page: WebDriver) -> None:
    ask(page, "acme", "drift", QUESTION)
    steps = page.find_elements(By.CSS_SELECTOR, "#route .drift-tree li[data-step]")
    summary = page.find_element(By.CSS_SELECTOR, "#route .drift-tree > summary").text
    assert summary == f"DRIFT search: {len(steps)} steps" and len(steps) >= 4
    # the question's follow-ups nested under it, each step with its question and status
    nested = page.find_elements(By.CSS_SELECTOR, "#route .drift-tree li[data-step='0'] > ul > li[data-step]")
    assert len(nested) >= 2
    assert all(s.get_attribute("data-status") == "answered" for s in steps)
    assert nested[0].find_element(By.CSS_SELECTOR, ".step-question").text.startswith("Regarding ")
    assert "[Data:" not in page.find_element(By.ID, "route").get_attribute("textContent")
    ask(page, "acme", "auto", "Summarize the story as a whole.")
    route = page.find_element(By.CSS_SELECTOR, "#route .route-tree > li")
    assert route.find_element(By.CSS_SELECTOR, ".route-mode").text == "auto → global"
    assert route.find_element(By.CSS_SELECTOR, "ul > li.why").text.startswith("why: summary wording")
    assert route.find_element(By.CSS_SELECTOR, "ul > li.router").text == "router: offline"


def test_a_trimmed_response_says_what_was_trimmed_and_why(page: WebDriver) -> None:
    ask(page, "acme", "local", QUESTION)  # its lists pass the test service's 8 items
    status = page.find_element(By.ID, "answer-status").text
    assert "(shortened)" not in status
    note = page.find_element(By.CSS_SELECTOR, "#answer-status .note").text
    assert note.startswith("Trimmed to keep the response small:") and "first 8 items" in note
    assert "The answer itself is whole" in note


def test_the_eval_table_is_words_and_counts(page: WebDriver) -> None:
    page.find_element(By.ID, "eval-section")
    WebDriverWait(page, 60).until(lambda d: d.find_element(By.ID, "eval-section").is_displayed())
    table = page.find_element(By.ID, "eval")
    assert "[object Object]" not in table.text and "_" not in table.text
    rows = {r.get_attribute("data-metric"): r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")}
    assert rows["statuses"].find_element(By.CSS_SELECTOR, "td").text == "completed 1"
    assert rows["answer_coverage"].find_element(By.CSS_SELECTOR, "th").text == "Answer coverage (%)"
    mode = table.find_element(By.CSS_SELECTOR, "thead th.mode")
    assert (
        mode.text == "basic" and mode.size["height"] < 2 * mode.size["width"]
    )  # one line, not a letter a line


def test_a_txt_citation_names_its_place(page: WebDriver) -> None:
    ask(page, MARKUP, "basic", QUESTION)  # a .txt without a layout map: no pages, no sections
    card = page.find_element(By.CSS_SELECTOR, "#sources li.source")
    WebDriverWait(page, 30).until(lambda d: card.get_attribute("data-loaded") == "true")
    assert "characters " in card.find_element(By.CSS_SELECTOR, ".where").text
    card.find_element(By.CSS_SELECTOR, "button.open-document").click()
    where = WebDriverWait(page, 30).until(
        lambda d: (
            d.find_element(By.CSS_SELECTOR, "dialog[open]")
            and d.find_element(By.ID, "document-where").text not in ("", "Loading…")
            and d.find_element(By.ID, "document-where").text
        )
    )
    assert where.startswith("characters "), where
    page.find_element(By.ID, "document-close").click()


def test_nothing_overflows_at_a_phones_width(phone: WebDriver) -> None:
    ask(phone, "acme", "local", QUESTION)
    _fits(phone)
    phone.find_element(By.ID, "answer-title").location_once_scrolled_into_view  # noqa: B018
    screenshot(phone, "web_app_answer_390.png")
    _open_report(phone).location_once_scrolled_into_view  # noqa: B018 - scrolls the card into view
    _fits(phone)
    screenshot(phone, "web_app_report_390.png")
    _hits(phone, "vector", "Marley had been dead seven years.")
    _fits(phone)
    phone.find_element(By.ID, "answer-title").location_once_scrolled_into_view  # noqa: B018
    screenshot(phone, "web_app_hits_390.png")
    ask(phone, "acme", "drift", QUESTION)
    phone.find_element(By.ID, "eval-section").location_once_scrolled_into_view  # noqa: B018
    _fits(phone)


def test_an_answer_with_citations_at_a_laptops_width(page: WebDriver) -> None:
    ask(page, "acme", "local", QUESTION)
    marker = page.find_elements(By.CSS_SELECTOR, "#answer button.cite")[2]
    marker.click()
    number = marker.get_attribute("data-marker")
    WebDriverWait(page, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#source-{number}[data-loaded='true']")
    )
    _fits(page)
    page.execute_script("window.scrollTo(0, 0)")
    screenshot(page, "web_app_answer_1280.png")


def test_a_report_is_read_with_its_passages_for_its_own_tenant_only(app_url: str) -> None:
    with httpx.Client(base_url=app_url, timeout=60) as client:
        r = client.get("/v1/namespaces/acme/reports/2", headers=auth(KEY_A))
        assert r.status_code == 200, r.text
        report = r.json()
        assert (report["title"], report["summary"]) == REPORTS[2]
        assert report["rating"] == 1.0 and report["level"] == 1
        assert report["passages"] and report["passages_total"] >= len(report["passages"])
        first = report["passages"][0]
        assert first["document_title"] == "carol.txt" and first["page_start"] == 1
        assert first["text"] and first["end_char"] > first["start_char"]
        assert "Ebenezer Scrooge" in report["entities"]
        top = client.get("/v1/namespaces/acme/reports/0", headers=auth(KEY_A)).json()
        assert top["passages"], "a top-level community's passages: those naming its members"
        missing = client.get("/v1/namespaces/acme/reports/99", headers=auth(KEY_A))
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        assert client.get("/v1/namespaces/globex/reports/2", headers=auth(KEY_A)).status_code == 403
        assert client.get("/v1/namespaces/acme/reports/2", headers=auth(KEY_B)).status_code == 403
        assert client.get("/v1/namespaces/acme/reports/2").status_code == 401
