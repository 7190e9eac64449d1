"""Reading an answer as a person does (issue 71), in headless Chromium against the real service: a PDF
citation shows the cited page itself (`.../pages/{n}.png` under the boxes of `.../pages/{n}.json`) with
the quoted sentence's boxes on the page, previous/next page and zoom; a text citation shows two levels,
the quoted sentence marked and the rest of its passage shaded; the query settings are built from each
mode's options schema and a change reaches the request's body; at 390 px nothing is wider than the screen.

Three pages of a real manual (libtasn1, from ../shared/data) are indexed once for the module into acme's
`acme-empty`, beside `web_data`'s tenants, from an input folder the service reads the PDF back from."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import Field
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from pipeline.index.run import index_folder
from pipeline.query import registry
from pipeline.service.queries import QueryService
from tests.conftest import shared_data
from tests.support.browser import screenshot
from tests.support.documents import pdf_pages
from tests.support.service_data import ServiceData, auth, offline_settings, serving
from tests.support.web_data import KEY_A, QUESTION
from tests.support.web_page import ask, signed_in

NS, PDF = "acme-empty", "asn1.pdf"  # acme's, not indexed by `web_data`
PDF_QUESTION = "How do comments begin and end in the ASN.1 syntax?"
LAPTOP, PHONE = (1280, 900), (390, 844)
WIDTHS = {800, 1200, 1600}  # the only widths the page asks the server to draw
# The page's query bodies, as sent: api.js calls the global fetch, wrapped here.
RECORD_BODIES = """
window.__bodies = [];
if (!window.__wrapped) {
  const original = window.fetch;
  window.fetch = (url, init) => {
    if (String(url).startsWith('/v1/query/')) window.__bodies.push(JSON.parse(init.body));
    return original(url, init);
  };
  window.__wrapped = true;
}
"""
# Each lit box's rectangle and the image's, in CSS pixels.
GEOMETRY = """
const view = arguments[0];
const rect = (e) => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
const image = view.querySelector('.pageview-image');
return {
  image: rect(image), natural: image.naturalWidth,
  sentence: [...view.querySelectorAll('.pageview-box.sentence')].map(rect),
  passage: [...view.querySelectorAll('.pageview-box.passage')].map(rect),
};
"""


@pytest.fixture(scope="module")
def reading_url(web_data: ServiceData, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The web app's service over `web_data` with the manual's pages indexed into acme-empty."""
    inputs = tmp_path_factory.mktemp("reading_inputs")
    (inputs / NS).mkdir()
    (inputs / NS / PDF).write_bytes(pdf_pages(str(shared_data("pdf_manuals", "libtasn1.pdf")), 5, 7))
    settings = offline_settings(
        web_data, input_root=inputs, service_max_body_bytes=65536, service_max_evidence_items=8
    )
    index_folder(NS, settings=settings, log=lambda _: None)
    service = QueryService(settings, embedder=web_data.embedder)
    service.warm_up()
    with serving(service) as url:
        yield url


@pytest.fixture(scope="module")
def page(browser: WebDriver, reading_url: str) -> Iterator[WebDriver]:
    browser.set_window_size(*LAPTOP)
    signed_in(browser, reading_url)
    yield browser


def _wait(browser: WebDriver, css: str, within: WebDriver | WebElement | None = None) -> WebElement:
    root = within or browser
    return WebDriverWait(browser, 60).until(lambda _: root.find_element(By.CSS_SELECTOR, css))


def _cited_page(browser: WebDriver) -> WebElement:
    """The first citation of a basic answer on the manual, opened: its card's page view, shown."""
    ask(browser, NS, "basic", PDF_QUESTION)
    marker = browser.find_element(By.CSS_SELECTOR, "#answer button.cite")
    marker.click()
    card = _wait(browser, f"#source-{marker.get_attribute('data-marker')}[data-loaded='true']")
    return _wait(browser, ".pageview[data-state='ready']", card)


def _card(view: WebElement) -> WebElement:
    return view.find_element(By.XPATH, "./ancestor::li[contains(@class, 'source')]")


def _inside(box: dict[str, float], image: dict[str, float]) -> bool:
    slack = 1.0  # a pixel of rounding
    return (
        box["x"] >= image["x"] - slack
        and box["y"] >= image["y"] - slack
        and box["x"] + box["w"] <= image["x"] + image["w"] + slack
        and box["y"] + box["h"] <= image["y"] + image["h"] + slack
    )


def _turned(browser: WebDriver, view: WebElement, button: str, page: int) -> None:
    view.find_element(By.CSS_SELECTOR, button).click()
    WebDriverWait(browser, 60).until(
        lambda _: view.get_attribute("data-page") == str(page) and view.get_attribute("data-state") == "ready"
    )


def _fits(browser: WebDriver) -> None:
    """The parts this module is about (the ask box with its settings, the answer and sources columns, the
    document view) no wider than the window, nothing in them sticking out."""
    wider = browser.execute_script(
        "const roots = [...document.querySelectorAll('.ask, .answer-column, .sources-column, dialog[open]')];"
        "return roots.flatMap((r) => [r, ...r.querySelectorAll('*')])"
        ".filter((e) => e.getClientRects().length && !e.closest('.pageview-scroll, .scroll')"
        " && e.getBoundingClientRect().right > window.innerWidth + 1)"
        ".slice(0, 8).map((e) => e.tagName + '#' + e.id + '.' + e.className)"
    )
    assert not wider, wider


def test_a_pdf_citation_shows_its_page_with_the_sentence_lit(page: WebDriver) -> None:
    view = _cited_page(page)
    shown = int(view.get_attribute("data-page"))
    assert view.get_attribute("data-page-count") == "3"
    where = view.find_element(By.CSS_SELECTOR, ".pageview-where").text
    assert where.startswith(f"p. {shown} of 3 · "), where  # and the section
    got = page.execute_script(GEOMETRY, view)
    assert got["natural"] in WIDTHS and got["image"]["w"] > 200
    assert got["sentence"], "the quoted sentence is lit on its page"
    for box in got["sentence"] + got["passage"]:
        assert box["w"] > 0 and box["h"] > 0 and _inside(box, got["image"]), (box, got["image"])
    # the passage's text is still there, folded under the page, with its sentence marked
    card = _card(view)
    assert card.find_element(By.CSS_SELECTOR, "details.passage-text .passage mark.quoted")
    screenshot(page, "web_app_page_1280.png")

    other = 2 if shown != 2 else 3
    step = ".pageview-next" if other > shown else ".pageview-prev"
    back = ".pageview-prev" if other > shown else ".pageview-next"
    _turned(page, view, step, other)
    assert where != view.find_element(By.CSS_SELECTOR, ".pageview-where").text
    _turned(page, view, back, shown)
    while (at := int(view.get_attribute("data-page"))) > 1:  # to the first page, where Prev is off
        _turned(page, view, ".pageview-prev", at - 1)
    assert view.find_element(By.CSS_SELECTOR, ".pageview-prev").get_attribute("disabled") is not None

    # 150%: the sheet is the page at one and a half times its printed size, drawn 1600 px wide
    Select(view.find_element(By.CSS_SELECTOR, ".pageview-zoom")).select_by_value("1.5")
    WebDriverWait(page, 60).until(
        lambda d: (
            d.execute_script(GEOMETRY, view)["natural"] == 1600
            and view.get_attribute("data-state") == "ready"
        )
    )
    sheet = view.find_element(By.CSS_SELECTOR, ".pageview-sheet").size["width"]
    assert abs(sheet - 612 * 96 / 72 * 1.5) <= 1, sheet  # a US Letter page, 612 points wide
    _fits(page)  # the page scrolls inside its own box


def test_the_document_view_of_a_pdf_is_its_page(page: WebDriver) -> None:
    view = _cited_page(page)
    cited = view.get_attribute("data-page")
    card = _card(view)
    card.find_element(By.CSS_SELECTOR, "button.open-document").click()
    shown = _wait(page, "dialog[open] .pageview[data-state='ready']")
    assert shown.get_attribute("data-page") == cited
    assert not page.find_element(By.ID, "document-text").is_displayed()
    got = page.execute_script(GEOMETRY, shown)
    assert got["sentence"] and all(_inside(b, got["image"]) for b in got["sentence"])
    screenshot(page, "web_app_document_page_1280.png")
    page.find_element(By.ID, "document-close").click()
    WebDriverWait(page, 30).until(  # gone with the dialog (its close event)
        lambda d: not d.find_elements(By.CSS_SELECTOR, "#document .pageview")
    )
    # a vector hit opens there too, its sentence closest to the query lit
    ask(page, NS, "vector", "The comments begin with two dashes")
    hit = _wait(page, "#hits[data-ready] li.hit")
    hit.find_element(By.CSS_SELECTOR, "button.open-document").click()
    shown = _wait(page, "dialog[open] .pageview[data-state='ready']")
    got = page.execute_script(GEOMETRY, shown)
    assert got["sentence"] and all(_inside(b, got["image"]) for b in got["sentence"] + got["passage"])
    page.find_element(By.ID, "document-close").click()


def test_a_text_citation_marks_the_sentence_and_shades_its_passage(page: WebDriver) -> None:
    ask(page, "acme", "basic", QUESTION)  # carol.txt: no page to draw
    marker = page.find_element(By.CSS_SELECTOR, "#answer button.cite")
    marker.click()
    card = _wait(page, f"#source-{marker.get_attribute('data-marker')}[data-loaded='true']")
    assert not card.find_elements(By.CSS_SELECTOR, ".pageview")
    shaded = card.find_element(By.CSS_SELECTOR, ".passage .span")
    marks = card.find_elements(By.CSS_SELECTOR, ".passage mark")
    assert len(marks) == 1 and "quoted" in marks[0].get_attribute("class")
    sentence = marks[0].text
    assert 12 < len(sentence) < len(shaded.text) and sentence in shaded.text
    assert sentence in page.find_element(By.ID, "answer").text  # the sentence the answer quoted
    assert "p. " in card.find_element(By.CSS_SELECTOR, ".where").text

    card.find_element(By.CSS_SELECTOR, "button.open-document").click()
    dialog = _wait(page, "dialog[open] #document-text mark.quoted")
    assert dialog.text == sentence
    marks = page.find_elements(By.CSS_SELECTOR, "#document-text mark")
    assert len(marks) == 1  # the whole passage is shaded, not marked
    passage = page.find_element(By.CSS_SELECTOR, "#document-text .span").text
    assert sentence in passage and len(passage) > len(sentence)
    assert page.find_element(By.ID, "document-where").text.startswith("p. ")
    page.find_element(By.ID, "document-close").click()


def _modes(url: str) -> list[dict[str, Any]]:
    """`GET /v1/modes` as the page reads it, its properties in the schema's order (a dict crossing
    into selenium comes back with its keys sorted)."""
    got = httpx.get(f"{url}/v1/modes", headers=auth(KEY_A), timeout=60)
    assert got.status_code == 200, got.text
    return got.json()["modes"]


def _fields(browser: WebDriver) -> list[str]:
    return [
        f.get_attribute("data-field")
        for f in browser.find_elements(By.CSS_SELECTOR, "#settings .setting[data-field]")
    ]


def test_the_settings_form_is_each_modes_options_schema(page: WebDriver, reading_url: str) -> None:
    modes = _modes(reading_url)
    for mode in modes:  # each mode's request model, as JSON Schema
        assert mode["options"] == registry.mode(mode["name"]).options.model_json_schema(), mode["name"]
    for mode in modes:
        Select(page.find_element(By.ID, "mode")).select_by_value(mode["name"])
        assert _fields(page) == list(mode["options"]["properties"]), mode["name"]
    Select(page.find_element(By.ID, "mode")).select_by_value("local")
    local = next(m for m in modes if m["name"] == "local")["options"]["properties"]["top_k"]
    top_k = page.find_element(By.ID, "setting-top_k")
    assert (top_k.get_attribute("type"), top_k.get_attribute("min"), top_k.get_attribute("max")) == (
        "number",
        "1",
        "50",
    )
    assert page.find_element(By.ID, "setting-top_k-help").get_attribute("textContent") == local["description"]
    Select(page.find_element(By.ID, "mode")).select_by_value("chunks")
    method = Select(page.find_element(By.ID, "setting-method"))
    assert [o.get_attribute("value") for o in method.options] == ["", "walk", "ppr"]  # an enum: a choice


def test_a_field_added_to_a_modes_options_appears_in_the_form(page: WebDriver, reading_url: str) -> None:
    basic = registry.mode("basic")

    class SharperOptions(basic.options):  # type: ignore[name-defined,misc]
        sharpness: int | None = Field(default=None, ge=2, le=9, description="How sharp; default 3")

    with registry.registered(dataclasses.replace(basic, name="sharper", options=SharperOptions)):
        signed_in(page, reading_url)
        Select(page.find_element(By.ID, "mode")).select_by_value("sharper")
        assert _fields(page) == [*basic.options.model_fields, "sharpness"]
        field = page.find_element(By.ID, "setting-sharpness")
        assert (field.get_attribute("min"), field.get_attribute("max")) == ("2", "9")
        help_text = page.find_element(By.ID, "setting-sharpness-help").get_attribute("textContent")
        assert help_text == "How sharp; default 3"
    signed_in(page, reading_url)  # the mode list as registered again


def test_a_settings_change_reaches_the_request(page: WebDriver) -> None:
    page.execute_script(RECORD_BODIES)
    Select(page.find_element(By.ID, "namespace")).select_by_value("acme")
    Select(page.find_element(By.ID, "mode")).select_by_value("local")
    page.find_element(By.CSS_SELECTOR, "#settings > summary").click()
    field = page.find_element(By.ID, "setting-top_k")
    field.send_keys("3", Keys.TAB)  # the change event
    assert page.find_element(By.CSS_SELECTOR, "#settings > summary").text == "Settings (1 changed)"
    page.execute_script("window.scrollTo(0, 0)")
    screenshot(page, "web_app_settings_1280.png")
    ask(page, "acme", "local", QUESTION)
    bodies = page.execute_script("return window.__bodies")
    assert bodies[-1] == {"namespace": "acme", "question": QUESTION, "top_k": 3}
    # only what was changed: another mode's body carries none of local's settings
    ask(page, "acme", "basic", QUESTION)
    assert page.execute_script("return window.__bodies")[-1] == {"namespace": "acme", "question": QUESTION}
    Select(page.find_element(By.ID, "mode")).select_by_value("local")
    assert page.find_element(By.ID, "setting-top_k").get_attribute("value") == "3"  # kept for its mode
    page.find_element(By.CSS_SELECTOR, "#settings .settings-reset").click()
    assert page.find_element(By.ID, "setting-top_k").get_attribute("value") == ""


def test_nothing_overflows_at_a_phones_width(page: WebDriver) -> None:
    page.set_window_size(*PHONE)
    try:
        assert page.execute_script("return window.innerWidth") == PHONE[0]
        Select(page.find_element(By.ID, "mode")).select_by_value("drift")  # the most settings
        settings = page.find_element(By.ID, "settings")
        if settings.get_attribute("open") is None:
            settings.find_element(By.CSS_SELECTOR, "summary").click()
        _fits(page)
        view = _cited_page(page)
        card = _card(view)
        page.execute_script("arguments[0].scrollIntoView({block: 'start'})", card)
        _fits(page)
        got = page.execute_script(GEOMETRY, view)
        assert got["image"]["w"] <= PHONE[0] and got["natural"] == 800
        screenshot(page, "web_app_page_390.png")
    finally:
        page.set_window_size(*LAPTOP)
