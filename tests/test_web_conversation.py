"""Reading an answer as a person does, in headless Chromium against the real service (conftest's `app_url`
over `web_data`, offline): the conversation survives a reload with its citations still opening, a
follow-up is answered (offline: alone, and the page says so), an answer is copied as Markdown with its
sources and regenerated in its place, the conversation is cleared; the progress indicator shows the
phase before the first delta; the graph around an answer is explored (search, expand, type filter,
details with the passages, no label cut at the edge).

Over HTTP: `POST /v1/condense` (offline, and with a scripted model through the chat door's condensing
call) and the entity search and details endpoints the explorer reads, with their key checks and bounds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from pipeline import prompts
from pipeline.service.queries import QueryService
from tests.support.browser import screenshot
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_engines import scripted_engine
from tests.support.service_data import ServiceData, auth, offline_settings, serving
from tests.support.web_data import KEY_A, KEY_B, QUESTION
from tests.support.web_page import ask, signed_in

LAPTOP, PHONE = (1280, 900), (390, 844)
FOLLOW_UP = "And who is his late partner?"
STORED = "return Object.keys(localStorage).filter((k) => k.startsWith('graphrag.conversation.'))"
TURNS = "#conversation li.turn"


@pytest.fixture(scope="module")
def page(browser: WebDriver, app_url: str) -> Iterator[WebDriver]:
    """The browser signed in as acme at laptop width, with no conversation kept from before."""
    browser.set_window_size(*LAPTOP)
    browser.get(app_url)
    browser.execute_script("localStorage.clear()")
    signed_in(browser, app_url)
    yield browser


def _turns(browser: WebDriver, count: int) -> list[Any]:
    WebDriverWait(browser, 60).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, TURNS)) == count)
    return browser.find_elements(By.CSS_SELECTOR, TURNS)


def _stored(browser: WebDriver) -> list[dict[str, Any]]:
    [name] = browser.execute_script(STORED)
    return json.loads(browser.execute_script("return localStorage.getItem(arguments[0])", name))


def _reload(browser: WebDriver) -> None:
    browser.refresh()  # the key stays in the tab's session storage: the page signs itself in again
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "main").is_displayed())


def _both_widths(browser: WebDriver, laptop: str, phone: str, name: str) -> None:
    """Screenshots at laptop width (element `laptop` in view) and at phone width (`phone`), where nothing
    is wider than the screen."""
    browser.execute_script("document.getElementById(arguments[0]).scrollIntoView()", laptop)
    screenshot(browser, f"{name}_1280.png")
    browser.set_window_size(*PHONE)
    try:
        browser.execute_script("document.getElementById(arguments[0]).scrollIntoView()", phone)
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= browser.execute_script("return window.innerWidth"), width
        screenshot(browser, f"{name}_390.png")
    finally:
        browser.set_window_size(*LAPTOP)


def test_a_reload_keeps_the_conversation_and_its_citations_open(page: WebDriver) -> None:
    ask(page, "acme", "local", QUESTION)
    [turn] = _turns(page, 1)
    answered = page.find_element(By.ID, "answer").text
    # kept per key and namespace, the key itself nowhere in the storage
    [name] = page.execute_script(STORED)
    assert re.fullmatch(r"graphrag\.conversation\.[0-9a-f]{16}\.acme", name), name
    everything = page.execute_script("return JSON.stringify(Object.entries(localStorage))")
    assert KEY_A not in everything

    _reload(page)
    [turn] = _turns(page, 1)
    assert turn.find_element(By.CSS_SELECTOR, ".turn-question").text == QUESTION
    assert "local search" in turn.find_element(By.CSS_SELECTOR, ".turn-meta").text
    assert turn.find_element(By.CSS_SELECTOR, "time").get_attribute("datetime")
    assert turn.find_element(By.CSS_SELECTOR, ".turn-answer").text == answered
    cited = _stored(page)[0]["done"]["citations"]
    marker = next(c["marker"] for c in cited if c["section"] == "sources" and c.get("document_id"))
    cite = turn.find_element(By.CSS_SELECTOR, f".turn-answer button.cite[data-marker='{marker}']")
    cite.click()  # opens in the answer panel, its passage read and the quoted sentence marked
    card = WebDriverWait(page, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, f"#source-{marker}[data-loaded='true']")
    )
    assert "carol.txt" in card.text and card.find_elements(By.CSS_SELECTOR, "mark")
    assert page.find_element(By.ID, "answer").text == answered
    assert turn.get_attribute("data-current") == "true"


def test_a_follow_up_offline_is_answered_alone_and_the_page_says_so(page: WebDriver) -> None:
    ask(page, "acme", "local", FOLLOW_UP)
    first, second = _turns(page, 2)
    assert second.find_element(By.CSS_SELECTOR, ".turn-question").text == FOLLOW_UP
    note = second.find_element(By.CSS_SELECTOR, ".turn-note").text
    assert note == "No model is configured, so the follow-up was asked alone, without the earlier questions."
    assert not first.find_elements(By.CSS_SELECTOR, ".turn-note")  # the first had nothing to follow
    assert second.find_element(By.CSS_SELECTOR, ".turn-answer").text.strip()
    assert _stored(page)[1]["body"]["question"] == FOLLOW_UP  # asked as written
    _both_widths(page, "conversation-section", "conversation-section", "web_app_conversation")


def test_copy_puts_the_answer_as_markdown_with_its_sources_on_the_clipboard(
    page: WebDriver, app_url: str
) -> None:
    page.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": app_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    first = _turns(page, 2)[0]
    button = first.find_element(By.CSS_SELECTOR, "button.copy")
    button.click()
    WebDriverWait(page, 10).until(lambda d: button.text == "Copied")
    copied = page.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "navigator.clipboard.readText().then(done, (e) => done('failed: ' + e));"
    )
    assert copied.startswith(f"## {QUESTION}\n"), copied
    body, sources = copied.split("### Sources\n\n")
    assert "[Data:" not in body and re.search(r"\[\d+\]", body), body
    lines = sources.strip().splitlines()
    assert any(re.match(r"\d+\. carol\.txt, p\. 1, Stave One, characters \d+–\d+$", line) for line in lines)
    assert any(re.match(r"\d+\. Community report \d+: ", line) for line in lines), lines
    assert any(re.match(r"\d+\. Entity: ", line) for line in lines), lines
    assert all(re.match(rf"{n}\. ", line) for n, line in enumerate(lines, start=1)), lines


def test_regenerate_replaces_the_answer_in_its_place(page: WebDriver) -> None:
    turns = _stored(page)
    stale = json.loads(json.dumps(turns))
    stale[0]["done"]["result"]["answer"] = "A stale answer."
    [name] = page.execute_script(STORED)
    page.execute_script("localStorage.setItem(arguments[0], arguments[1])", name, json.dumps(stale))
    _reload(page)
    first = _turns(page, 2)[0]
    assert first.find_element(By.CSS_SELECTOR, ".turn-answer").text == "A stale answer."
    first.find_element(By.CSS_SELECTOR, "button.regenerate").click()
    WebDriverWait(page, 120).until(
        lambda d: "regenerated 1×" in d.find_element(By.CSS_SELECTOR, f"{TURNS} .turn-meta").text
    )
    first, _ = _turns(page, 2)
    again = _stored(page)
    assert [t["id"] for t in again] == [t["id"] for t in turns]  # replaced, not added
    assert again[0]["body"] == turns[0]["body"] and again[0]["mode"] == "local"
    fresh = first.find_element(By.CSS_SELECTOR, ".turn-answer").text
    assert "stale" not in fresh and fresh == page.find_element(By.ID, "answer").text


def test_the_progress_indicator_shows_the_phase_before_the_first_delta(page: WebDriver) -> None:
    # Every phase the indicator says, synchronously, with whether it is shown and how many deltas came.
    page.execute_script(
        """
        const native = Object.getOwnPropertyDescriptor(Node.prototype, 'textContent');
        window.__phases = [];
        window.__restore = () => Object.defineProperty(Node.prototype, 'textContent', native);
        Object.defineProperty(Node.prototype, 'textContent', {
          configurable: true, get() { return native.get.call(this); },
          set(value) {
            if (this.classList && this.classList.contains('progress-phase')) {
              const box = document.getElementById('progress');
              window.__phases.push({ text: String(value), phase: box.dataset.phase, shown: !box.hidden,
                                     deltas: Number(document.getElementById('answer').dataset.deltas) });
            }
            native.set.call(this, value);
          },
        });
        """
    )
    try:
        ask(page, "acme", "global", "What is Scrooge's business world like?")
        phases = page.execute_script("return window.__phases")
    finally:
        page.execute_script("window.__restore()")
    before = [p for p in phases if p["deltas"] == 0 and p["shown"]]
    assert before[0]["phase"] == "sent", phases
    assert {"condense", "route", "context"} <= {p["phase"] for p in before}, phases  # a follow-up
    assert any("Map step" in p["text"] for p in before) and any("reduce step" in p["text"] for p in before)
    assert not page.find_element(By.ID, "progress").is_displayed()  # gone once the answer came


def test_clear_empties_the_conversation(page: WebDriver) -> None:
    _turns(page, 3)
    page.find_element(By.ID, "conversation-clear").click()
    WebDriverWait(page, 10).until(lambda d: not d.find_elements(By.CSS_SELECTOR, TURNS))
    assert not page.find_element(By.ID, "conversation-section").is_displayed()
    assert page.execute_script(STORED) == []
    _reload(page)
    assert not page.find_elements(By.CSS_SELECTOR, TURNS)


# ---- the graph around an answer ------------------------------------------------------------------------
def _labels_inside(browser: WebDriver) -> None:
    """Every drawn node's box, its label included, within the canvas."""
    outside = browser.execute_script(
        """
        const box = document.getElementById('graph'), net = box.network;
        const out = [];
        for (const id of net.body.data.nodes.getIds({ filter: (n) => !n.hidden })) {
          const b = net.getBoundingBox(id);
          const lo = net.canvasToDOM({ x: b.left, y: b.top }), hi = net.canvasToDOM({ x: b.right, y: b.bottom });
          if (lo.x < 0 || lo.y < 0 || hi.x > box.clientWidth || hi.y > box.clientHeight) out.push([id, lo, hi]);
        }
        return out;
        """
    )
    assert outside == [], outside


def _nodes(browser: WebDriver, expected: int) -> None:
    WebDriverWait(browser, 30).until(
        lambda d: (
            d.find_element(By.ID, "graph").get_attribute("data-nodes") == str(expected)
            and not d.find_element(By.ID, "graph").get_attribute("data-expanding")
        )
    )


def _find(browser: WebDriver, name: str) -> list[Any]:
    field = browser.find_element(By.ID, "entity-search")
    field.clear()
    field.send_keys(name)
    browser.find_element(By.CSS_SELECTOR, "#entity-search-form button").click()
    results = browser.find_element(By.ID, "entity-results")
    WebDriverWait(browser, 30).until(lambda d: results.get_attribute("data-ready") == "true")
    return results.find_elements(By.CSS_SELECTOR, "button[data-entity]")


def _details(browser: WebDriver, title: str) -> Any:
    return WebDriverWait(browser, 30).until(
        lambda d: (
            (box := d.find_element(By.ID, "entity-details")).get_attribute("data-ready")
            and box.find_element(By.CSS_SELECTOR, "h3").text == title
            and box
        )
    )


def test_the_graph_expands_searches_filters_and_details_an_entity(page: WebDriver) -> None:
    ask(page, "acme", "local", QUESTION)
    WebDriverWait(page, 30).until(lambda d: d.find_element(By.ID, "entities").get_attribute("data-ready"))
    page.find_element(By.CSS_SELECTOR, "#entities button.chip").click()
    WebDriverWait(page, 30).until(lambda d: d.find_element(By.ID, "graph").get_attribute("data-drawn"))

    # search finds an entity by part of its name; start again from Tiny Tim: he and his father
    assert [b.text for b in _find(page, "tiny")] == ["Tiny Tim"]
    _find(page, "tiny")[0].click()
    _details(page, "Tiny Tim").find_element(By.CSS_SELECTOR, "button.redraw").click()
    _nodes(page, 2)
    _labels_inside(page)
    # expand Bob Cratchit (chosen from the search): Scrooge joins
    _find(page, "cratchit")[0].click()
    _details(page, "Bob Cratchit").find_element(By.CSS_SELECTOR, "button.expand").click()
    _nodes(page, 3)
    _labels_inside(page)
    # an entity not drawn yet, chosen from the search, is merged in with its neighbours
    _find(page, "london")[0].click()
    _nodes(page, 5)
    _labels_inside(page)

    # the details: description, type, degree and the passages it comes from
    box = _details(page, "London")
    assert box.find_element(By.CSS_SELECTOR, ".entity-description").text == (
        "The foggy city where the story takes place."
    )
    assert "geo · degree" in box.find_element(By.CSS_SELECTOR, ".entity-type").text
    [passage] = box.find_elements(By.CSS_SELECTOR, ".entity-passages button.link")
    assert "carol.txt" in passage.text and "Stave Two" in passage.text

    _both_widths(page, "graph-section", "entity-details", "web_app_graph_explorer")
    # the legend: the types drawn with their colours; unticking one hides its nodes only
    legend = {e.get_attribute("data-type"): e for e in page.find_elements(By.CSS_SELECTOR, ".legend-type")}
    assert set(legend) == {"person", "geo"} and legend["person"].text == "person (4)"
    legend["person"].find_element(By.CSS_SELECTOR, "input").click()
    hidden = page.execute_script(
        "return document.getElementById('graph').network.body.data.nodes.get()"
        ".map((n) => [n.type, Boolean(n.hidden)])"
    )
    assert sorted(hidden) == [["geo", False]] + [["person", True]] * 4
    legend["person"].find_element(By.CSS_SELECTOR, "input").click()

    passage.click()  # the passage opens in the document view, marked
    WebDriverWait(page, 30).until(
        lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open] #document-text mark")
    )
    page.find_element(By.ID, "document-close").click()


# ---- over HTTP ------------------------------------------------------------------------------------------
def test_entity_search_and_details_over_http(app_url: str) -> None:
    with httpx.Client(base_url=app_url, headers=auth(KEY_A), timeout=30) as http:
        found = http.get("/v1/namespaces/acme/entities", params={"q": "SCRO"}).json()
        assert [e["title"] for e in found["entities"]] == ["Ebenezer Scrooge"] and found["total"] == 1
        assert {t["type"]: t["count"] for t in found["types"]} == {"person": 5, "geo": 1}
        assert all(re.fullmatch(r"#[0-9a-f]{6}", t["color"]) for t in found["types"])
        by_alias = http.get("/v1/namespaces/acme/entities", params={"q": "marley"}).json()
        assert [e["title"] for e in by_alias["entities"]] == ["Jacob Marley"]
        everyone = http.get("/v1/namespaces/acme/entities", params={"limit": 3}).json()
        assert (
            everyone["total"] == 6 and everyone["entities"][0]["title"] == "Ebenezer Scrooge"
        )  # best connected
        geo = http.get("/v1/namespaces/acme/entities", params={"type": "geo"}).json()
        assert [e["title"] for e in geo["entities"]] == ["London"]

        details = http.get("/v1/namespaces/acme/entities/Ebenezer Scrooge").json()
        assert details["type"] == "person" and details["degree"] >= 3
        assert details["description"] == "A cold-hearted, miserly old businessman."
        assert details["passages_total"] == 3 and len(details["passages"]) == 3
        first = details["passages"][0]
        assert (
            first["document_title"] == "carol.txt" and first["start_char"] == 0 and first["page_start"] == 1
        )
        by_id = http.get(f"/v1/namespaces/acme/entities/{details['id']}").json()
        assert by_id["title"] == "Ebenezer Scrooge"

        assert http.get("/v1/namespaces/acme/entities/Nobody").status_code == 404
        assert http.get("/v1/namespaces/acme/entities", params={"limit": 101}).status_code == 422
        assert http.get("/v1/namespaces/acme/entities", params={"q": "x" * 201}).status_code == 422
        for path in ("/v1/namespaces/globex/entities", "/v1/namespaces/globex/entities/Scrooge"):
            assert http.get(path).status_code == 403
        assert httpx.get(f"{app_url}/v1/namespaces/acme/entities").status_code == 401
    with httpx.Client(base_url=app_url, headers=auth(KEY_B), timeout=30) as http:
        assert http.get("/v1/namespaces/globex/entities").status_code == 200


HISTORY = [{"question": "Who is Ebenezer Scrooge?", "answer": "A covetous old man [Data: Sources (1)]."}]


def test_condense_offline_hands_the_follow_up_back_alone(app_url: str) -> None:
    body = {"namespace": "acme", "history": HISTORY, "question": "Who is his clerk?"}
    with httpx.Client(base_url=app_url, headers=auth(KEY_A), timeout=30) as http:
        got = http.post("/v1/condense", json=body).json()
        assert got["question"] == "Who is his clerk?" and got["condensed"] is False
        assert "no model is configured" in got["reason"]
        alone = http.post("/v1/condense", json={**body, "history": []}).json()
        assert alone == {"question": "Who is his clerk?", "condensed": False, "reason": "no earlier question"}
        assert http.post("/v1/condense", json={**body, "namespace": "globex"}).status_code == 403
        too_many = {**body, "history": HISTORY * 21}
        long_answer = {**body, "history": [{"question": "Q?", "answer": "a" * 20_001}]}
        for bad in (too_many, long_answer, {**body, "question": ""}, {**body, "extra": 1}):
            refused = http.post("/v1/condense", json=bad)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_request"
    assert httpx.post(f"{app_url}/v1/condense", json=body).status_code == 401


CONDENSED = "Who is Ebenezer Scrooge's clerk?"


def test_condense_with_a_model_rewrites_the_follow_up(web_data: ServiceData, tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> str:
        assert body["messages"][0]["content"].startswith(prompts.CHAT_CONDENSE.system)
        seen.append(body)
        return f"{CONDENSED}\n"

    with FaultProxy(None, responder=model) as proxy:
        svc = QueryService(
            offline_settings(web_data),
            embedder=web_data.embedder,
            engine_factory=lambda: scripted_engine(proxy.base_url, tmp_path),
        )
        with serving(svc) as url:
            body = {"namespace": "acme", "history": HISTORY, "question": "Who is his clerk?"}
            got = httpx.post(f"{url}/v1/condense", json=body, headers=auth(KEY_A), timeout=60).json()
    assert got["question"] == CONDENSED and got["condensed"] is True and got["reason"] is None
    assert got["usage"]["prompt_tokens"] > 0
    [call] = seen
    prompt = call["messages"][1]["content"]
    assert "User: Who is Ebenezer Scrooge?" in prompt and "Assistant: A covetous old man" in prompt
    assert "Last question: Who is his clerk?" in prompt
