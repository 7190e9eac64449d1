"""The web app's page driven as a person would: `signed_in` opens it and signs in with a key from the
keyboard; `ask` chooses a namespace and mode, sends a question and waits until the answer is done."""

from __future__ import annotations

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.web_data import KEY_A

WAIT = 120  # a cold first query loads the embedding and NER models; only a hang gets near this


def signed_in(browser: WebDriver, url: str, key: str = KEY_A) -> None:
    browser.get(url)
    WebDriverWait(browser, 30).until(lambda d: d.execute_script("return document.readyState") == "complete")
    browser.execute_script("sessionStorage.clear()")
    browser.get(url)
    field = browser.find_element(By.ID, "key")
    field.send_keys(key, Keys.ENTER)  # the form submits from the keyboard
    WebDriverWait(browser, 30).until(lambda d: d.find_element(By.ID, "main").is_displayed())


def ask(browser: WebDriver, namespace: str, mode: str | None, question: str) -> None:
    Select(browser.find_element(By.ID, "namespace")).select_by_value(namespace)
    if mode is not None:
        Select(browser.find_element(By.ID, "mode")).select_by_value(mode)
    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question, Keys.ENTER)  # Enter sends
    WebDriverWait(browser, WAIT, poll_frequency=0.2).until(
        lambda d: d.find_element(By.ID, "answer").get_attribute("data-state") in ("done", "error")
    )
    answer = browser.find_element(By.ID, "answer")
    assert answer.get_attribute("data-state") == "done", browser.find_element(By.ID, "answer-status").text
