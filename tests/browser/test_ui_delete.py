"""Deleting an ended run from its page (issue 42 item 5, erasure), in headless Chromium.

The delete action exists only on an ended run's page, asks for a second explicit click
(keyboard-reachable), calls ``POST /runs/{id}/delete`` and shows what the API erased on
the list, where the run is gone; the API is then asked directly whether the run exists.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

from playwright.sync_api import expect

from world_aws.local.dev import DevStack


def _key() -> str:
    return uuid.uuid4().hex[:8]


def _get_run(dev: DevStack, run_id: str) -> tuple[int, dict[str, Any]]:
    """``GET /runs/{id}`` through the dev server's real HTTP API: (status, body)."""
    request = urllib.request.Request(f"{dev.url}/runs/{run_id}", headers={"accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def _status(page: Any) -> Any:
    return page.get_by_test_id("run-meta").get_by_test_id("status")


def test_an_ended_run_is_deleted_from_its_page_after_a_confirmation(page: Any, dev: DevStack) -> None:
    runtime = dev.stack.runtime
    # GIVEN an ended (failed) run, and another ended run that stays
    doomed = runtime.start("declined", f"4000-{_key()}").run_id
    kept = runtime.start("declined", f"4000-{_key()}").run_id
    page.goto(f"{dev.url}/ui/#/runs/{doomed}")
    expect(_status(page)).to_have_text("failed")
    assert _get_run(dev, doomed)[0] == 200
    # WHEN the delete action is chosen with the keyboard, then backed out of with Escape
    ask = page.get_by_test_id("delete")
    ask.focus()
    page.keyboard.press("Enter")
    confirm = page.get_by_test_id("delete-confirm")
    expect(confirm).to_be_focused()
    expect(ask).to_be_hidden()
    page.keyboard.press("Escape")
    # THEN nothing was deleted and the first button is back, focused
    expect(confirm).to_be_hidden()
    expect(ask).to_be_focused()
    assert _get_run(dev, doomed)[0] == 200
    # WHEN it is chosen again and confirmed, with the keyboard
    page.keyboard.press("Enter")
    expect(confirm).to_be_focused()
    page.keyboard.press("Enter")
    # THEN the list shows what the API erased, and the run is not listed any more
    expect(page).to_have_url(f"{dev.url}/ui/#/")
    notice = page.get_by_test_id("notice")
    expect(notice).to_contain_text(f"Deleted run {doomed}")
    expect(notice).to_contain_text("records")
    expect(page.locator(f"[data-testid=run-row][data-run-id='{kept}']")).to_be_visible()
    expect(page.locator(f"[data-testid=run-row][data-run-id='{doomed}']")).to_have_count(0)
    # AND the API no longer knows it
    status, body = _get_run(dev, doomed)
    assert status == 404, body
    assert _get_run(dev, kept)[0] == 200


def test_a_live_run_has_no_delete_action_until_it_ends(page: Any, dev: DevStack) -> None:
    # GIVEN a run waiting on its approval hook
    run_id = dev.stack.runtime.start("approval", f"live-{_key()}").run_id
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    cancel = page.get_by_test_id("cancel")
    expect(cancel).to_be_visible()
    # THEN it offers cancel, not delete
    expect(page.get_by_test_id("delete")).to_have_count(0)
    # WHEN it is cancelled from the page, it has ended: now it can be deleted
    cancel.click()
    expect(_status(page)).to_have_text("cancelled")
    expect(page.get_by_test_id("delete")).to_be_visible()
    assert _get_run(dev, run_id)[0] == 200


def test_a_refused_delete_shows_the_apis_error_and_keeps_the_page(page: Any, dev: DevStack) -> None:
    # GIVEN an ended run's page, and the run erased meanwhile by someone else (the CLI, the API)
    run_id = dev.stack.runtime.start("declined", f"4000-{_key()}").run_id
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    expect(_status(page)).to_have_text("failed")
    dev.stack.runtime.delete_run(run_id)
    # WHEN the page deletes it
    page.get_by_test_id("delete").click()
    page.get_by_test_id("delete-confirm").click()
    # THEN the API's refusal is shown as it said it, and the page stays on the run
    problem = page.locator("#problem")
    expect(problem).to_be_visible()
    expect(problem).to_contain_text(f"POST /runs/{run_id}/delete: 404")
    expect(page).to_have_url(f"{dev.url}/ui/#/runs/{run_id}")
    expect(page.get_by_test_id("delete")).to_be_visible()
