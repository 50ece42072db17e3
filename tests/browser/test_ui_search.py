"""The runs list's search and filters, the run's input at the top of its page, and times with a zone.

Headless Chromium against the module's dev stack; every check is an auto-waiting
expectation (the page polls the API), none measures time.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.sync_api import expect

from world_aws.local.dev import DevStack


def _start(dev: DevStack, workflow: str, *args: Any, attributes: dict[str, str] | None = None) -> str:
    return dev.stack.runtime.start(workflow, *args, attributes=attributes).run_id


def test_the_search_box_opens_a_run_by_its_id(page: Any, dev: DevStack) -> None:
    # GIVEN a run, and the runs list
    run_id = _start(dev, "declined", "4000")
    page.goto(f"{dev.url}/ui/")
    # WHEN its id is searched
    page.get_by_test_id("search-run").fill(run_id)
    page.get_by_role("button", name="Open").click()
    # THEN its page opens
    expect(page).to_have_url(f"{dev.url}/ui/#/runs/{run_id}")
    expect(page.get_by_test_id("run-meta")).to_contain_text("declined")


def test_searching_an_unknown_run_id_says_so_and_stays(page: Any, dev: DevStack) -> None:
    page.goto(f"{dev.url}/ui/")
    page.get_by_test_id("search-run").fill("run_01NOSUCHRUN")
    page.get_by_role("button", name="Open").click()
    expect(page.locator("#problem")).to_contain_text("404")
    expect(page).to_have_url(f"{dev.url}/ui/")


def test_the_list_filters_by_attribute(page: Any, dev: DevStack) -> None:
    # GIVEN two runs of one workflow, one of them for customer c-<key>
    key = uuid.uuid4().hex[:8]
    mine = _start(dev, "declined", "4000", attributes={"customer": f"c-{key}"})
    other = _start(dev, "declined", "4000", attributes={"customer": "someone-else"})
    page.goto(f"{dev.url}/ui/")
    # WHEN the list is filtered by that attribute
    page.get_by_test_id("filter-attribute").fill(f"customer=c-{key}")
    page.get_by_test_id("filter-attribute").press("Enter")
    # THEN only that run is listed, and the filter is in the URL
    expect(page).to_have_url(re.compile(rf"attribute=customer%3Dc-{key}"))
    expect(page.locator(f"[data-run-id='{mine}']")).to_be_visible()
    expect(page.locator(f"[data-run-id='{other}']")).to_have_count(0)
    expect(page.get_by_test_id("run-row")).to_have_count(1)


def test_the_list_filters_by_creation_time(page: Any, dev: DevStack) -> None:
    # GIVEN a run, and the list filtered to runs created from an hour after now
    run_id = _start(dev, "declined", "4000")
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    page.goto(f"{dev.url}/ui/#/?from={later}")
    # THEN nothing is listed; an hour back lists the run again
    expect(page.get_by_test_id("runs")).to_contain_text("no runs")
    earlier = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    page.goto(f"{dev.url}/ui/#/?from={earlier}")
    expect(page.locator(f"[data-run-id='{run_id}']")).to_be_visible()


def test_the_run_page_shows_its_input_first_and_times_with_a_zone(page: Any, dev: DevStack) -> None:
    # GIVEN a run started with an argument and an attribute
    run_id = _start(dev, "declined", "4111-card", attributes={"order": "o-9"})
    # WHEN its page is opened
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    meta = page.get_by_test_id("run-meta")
    # THEN its input is on it, right after the workflow, and its attribute
    expect(page.get_by_test_id("run-input")).to_contain_text("4111-card")
    expect(meta.locator("dt").nth(1)).to_have_text("input")
    expect(page.get_by_test_id("run-attributes")).to_have_text("order=o-9")
    # AND its times name their zone (the browser's: Chromium here runs in UTC unless TZ says)
    expect(meta).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (UTC|GMT[+-]\d+|[A-Z]{2,5})"))
