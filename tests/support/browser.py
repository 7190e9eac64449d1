"""Headless Chromium driven by selenium (`make test` installs chromium and chromium-driver): conftest's
`browser` fixture is one per module that asks; `screenshot` keeps what it showed when PIPELINE_SCREENSHOTS
names a folder."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@contextlib.contextmanager
def headless_chromium(profile: Path) -> Iterator[webdriver.Chrome]:
    """A headless Chromium, its user profile in `profile`, quit when the block ends."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(browser: webdriver.Chrome, name: str) -> None:
    """With PIPELINE_SCREENSHOTS=<folder>, keep what the browser showed (for a person to look at)."""
    folder = os.environ.get("PIPELINE_SCREENSHOTS")
    if folder:
        browser.save_screenshot(str(Path(folder) / name))
