"""`pipeline graph`: the entity graph of the sample book as one HTML page, opened from a file URL in
headless Chromium (no server, nothing loaded from the network), searched for an entity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from pipeline.ops.graph_layout import MAX_SIZE, MIN_SIZE, room
from tests.conftest import REPO_ROOT
from tests.support.browser import screenshot
from tests.support.drawing import overlaps


def test_graph_page_opens_from_a_file_and_finds_an_entity_by_search(sample_book, browser, tmp_path):
    page = tmp_path / "graph.html"
    out = subprocess.run(
        [sys.executable, "-m", "assets", "graph", "--namespace", "demo", "--out", str(page)],
        capture_output=True,
        text=True,
        env={**os.environ, "PIPELINE_STORAGE_ROOT": str(sample_book)},
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = page.read_text("utf-8")
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", text)  # everything inlined
    # readable: sizes bounded, by degree; no two nodes' room (the disc, or the wider label under it)
    # overlaps on the book's dense central community, so neighbouring labels do not run into one another
    nodes = json.loads(re.search(r"^const data = (.*);$", text, flags=re.MULTILINE).group(1))["nodes"]
    assert all(MIN_SIZE <= n["size"] <= MAX_SIZE for n in nodes)
    rooms = {n["id"]: room(n["size"], n["label"]) for n in nodes}
    assert any(rooms[n["id"]] > n["size"] for n in nodes), "some label is wider than its disc"
    assert overlaps({n["id"]: (n["x"], n["y"]) for n in nodes}, rooms) == []
    browser.get(page.as_uri())
    WebDriverWait(browser, 60, poll_frequency=1).until(
        lambda d: d.execute_script("return typeof vis !== 'undefined' && typeof network !== 'undefined'")
    )
    browser.find_element(By.ID, "search").send_keys("scrooge")
    WebDriverWait(browser, 30, poll_frequency=1).until(
        lambda d: "Ebenezer Scrooge" in d.find_element(By.ID, "found").text
    )
    selected = browser.execute_script("return network.getSelectedNodes()")
    assert len(selected) == 1
    screenshot(browser, "i34_graph_view.png")
