"""The web UI in a real browser against a real dev stack: list, Gantt, stacks, cancel, resume, start, fork.

Every check is one of Playwright's auto-waiting expectations (the page polls the
API, so each eventually holds); none measures time.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any

from playwright.sync_api import expect

from world_aws.local.dev import DevStack
from world_aws.worker.holding import blocked_mark

from .apps import BODIES, FIXED, charge_card, release
from .conftest import OUT


def _key() -> str:
    return uuid.uuid4().hex[:8]


def _start(dev: DevStack, workflow: str, *args: Any) -> str:
    return dev.stack.runtime.start(workflow, *args).run_id


def _open_run(page: Any, dev: DevStack, run_id: str) -> None:
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")


def _steps(page: Any) -> Any:
    return page.get_by_test_id("gantt-row").and_(page.locator("[data-kind=step]"))


def test_the_list_shows_a_started_run_and_follows_its_status(page: Any, dev: DevStack) -> None:
    key = _key()
    run_id = _start(dev, "three_gates", key)
    page.goto(f"{dev.url}/ui/")
    row = page.locator(f"[data-testid=run-row][data-run-id='{run_id}']")
    expect(row).to_contain_text("three_gates")
    expect(row.get_by_test_id("status")).to_have_text("running")
    for i in range(3):
        release(f"{key}:{i}")
    expect(row.get_by_test_id("status")).to_have_text("completed")  # live, without a reload


def test_the_list_filters_by_status_and_workflow(page: Any, dev: DevStack) -> None:
    failed = _start(dev, "declined", "4000")
    page.goto(f"{dev.url}/ui/")
    page.get_by_test_id("filter-workflow").select_option("declined")
    expect(page).to_have_url(f"{dev.url}/ui/#/?workflow=declined")
    expect(page.locator(f"[data-run-id='{failed}']")).to_be_visible()
    expect(page.locator("[data-testid=run-row]:not([data-status=failed])")).to_have_count(0)
    page.get_by_test_id("filter-status").select_option("completed")
    expect(page.locator("[data-testid=runs]")).to_contain_text("no runs")


def test_the_list_pages_through_runs_newest_first(page: Any, dev: DevStack) -> None:
    started = [_start(dev, "declined", f"page-{i}") for i in range(21)]
    page.goto(f"{dev.url}/ui/#/?workflow=declined")
    rows = page.get_by_test_id("run-row")
    expect(rows).to_have_count(20)
    expect(rows.first).to_have_attribute("data-run-id", started[-1])  # the newest first
    page.get_by_role("button", name="Older ›").click()
    expect(page.get_by_role("button", name="‹ Newer")).to_be_enabled()
    expect(page.locator(f"[data-run-id='{started[-1]}']")).to_have_count(0)
    page.get_by_role("button", name="‹ Newer").click()
    expect(rows.first).to_have_attribute("data-run-id", started[-1])


def test_the_gantt_gains_a_bar_as_each_step_finishes(page: Any, dev: DevStack) -> None:
    key = _key()
    run_id = _start(dev, "three_gates", key)
    _open_run(page, dev, run_id)
    steps = _steps(page)
    expect(steps).to_have_count(1)
    running = steps.first.get_by_test_id("attempt")
    expect(running).to_have_attribute("data-outcome", "running")
    # The running step's time counts up live. (Its bar's share of the axis may
    # stay 100% when the step started the instant the run did.)
    took = steps.first.get_by_test_id("took")
    expect(took).not_to_have_text("")
    expect(took).not_to_have_text(took.inner_text())
    for i in range(3):
        release(f"{key}:{i}")
        expect(steps.nth(i).get_by_test_id("attempt")).to_have_attribute("data-outcome", "completed")
    expect(steps).to_have_count(3)
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(page.get_by_test_id("result")).to_contain_text(f"passed {key}:2")


def test_a_failed_steps_stack_is_on_the_run_page(page: Any, dev: DevStack) -> None:
    run_id = _start(dev, "declined", "4111")
    _open_run(page, dev, run_id)
    error = page.get_by_test_id("run-error")
    expect(error).to_contain_text("card 4111 was declined")
    expect(error.get_by_test_id("error-stack").last).to_contain_text(
        'raise FatalError(f"card {card} was declined")'
    )
    expect(page.get_by_test_id("failed-attempt")).to_contain_text(
        f"{charge_card.name.rsplit('.', 1)[-1]} attempt 1"
    )
    expect(_steps(page).first).to_have_attribute("data-status", "failed")


def test_cancel_from_the_page_ends_the_run_and_abandons_its_running_step(page: Any, dev: DevStack) -> None:
    key = _key()
    run_id = _start(dev, "three_gates", key)
    _open_run(page, dev, run_id)
    expect(_steps(page).first.get_by_test_id("attempt")).to_have_attribute("data-outcome", "running")
    page.get_by_test_id("cancel-reason").fill("customer left")
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("cancelled")
    expect(page.get_by_test_id("run-error")).to_contain_text("customer left")
    expect(_steps(page).first.get_by_test_id("attempt")).to_have_attribute("data-outcome", "abandoned")
    expect(page.get_by_test_id("cancel")).to_have_count(0)
    release(f"{key}:0")
    assert dev.stack.runtime.get_run(run_id).status().value == "cancelled"


def test_resume_from_the_page_completes_the_run_and_a_screenshot_is_kept(page: Any, dev: DevStack) -> None:
    order = f"o-{_key()}"
    run_id = _start(dev, "approval", order)
    _open_run(page, dev, run_id)
    form = page.locator(f"[data-testid=resume-form][data-token='approve:{order}']")
    form.get_by_test_id("resume-payload").fill(json.dumps({"approved": True, "by": "ada"}))
    form.get_by_role("button", name="Resume").click()
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(page.get_by_test_id("result")).to_contain_text('"by": "ada"')
    expect(page.locator("[data-kind=hook]")).to_have_attribute("data-status", "received")
    expect(page.locator("[data-kind=wait]")).to_have_attribute("data-status", "completed")
    outcomes = _steps(page).first.get_by_test_id("attempt")
    expect(outcomes).to_have_count(2)  # the retried quote: both attempts on its bar
    expect(page.get_by_test_id("summary")).to_contain_text("1 retry")
    OUT.mkdir(parents=True, exist_ok=True)
    shot = OUT / "ui-run-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_a_large_payload_is_loaded_on_demand(page: Any, dev: DevStack) -> None:
    card = "9" * 3000  # over the inline size: the event list carries its size only
    run_id = _start(dev, "declined", card)
    _open_run(page, dev, run_id)
    created = page.locator("[data-testid=event-row][data-type=run_created]")
    created.get_by_test_id("load-payload").click()
    expect(created.get_by_test_id("payload-json")).to_contain_text(card)


def test_start_a_registered_workflow_from_the_list_page(page: Any, dev: DevStack) -> None:
    page.goto(f"{dev.url}/ui/")
    form = page.get_by_test_id("start-form")
    form.get_by_test_id("start-workflow").select_option("declined")
    form.get_by_test_id("start-args").fill('["5555"]')
    form.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/ui/#/runs/wrun_\w+$"))
    expect(page.get_by_test_id("run-error")).to_contain_text("card 5555 was declined")


def test_a_patch_decision_is_an_instant_on_the_gantt(page: Any, dev: DevStack) -> None:
    # GIVEN a run that reaches patched("gift-wrap") after its step, on code that has the change
    key = _key()
    run_id = _start(dev, "patched_gate", key)
    _open_run(page, dev, run_id)
    release(f"{key}:0")
    # THEN its page shows the recorded decision as a "patch" row named by the change
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    row = page.get_by_test_id("gantt-row").and_(page.locator("[data-kind=patch]"))
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-name", "gift-wrap")
    expect(row).to_have_attribute("data-status", "applied")
    expect(page.get_by_test_id("result")).to_contain_text("wrapped")


def test_fork_from_the_page_reruns_the_failed_step_on_fixed_code_and_links_back(
    page: Any, dev: DevStack
) -> None:
    # GIVEN a run that failed in its third step, open on its page
    key = _key()
    run_id = _start(dev, "packing", key)
    _open_run(page, dev, run_id)
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("failed")
    expect(page.get_by_test_id("fork-from")).to_have_value("")  # where it failed, by default
    # WHEN the fix is in and the Fork button is pressed
    FIXED.add(key)
    page.get_by_test_id("fork").click()
    # THEN the page moves to the fork, which completes, and names its original
    expect(page).not_to_have_url(re.compile(f"{run_id}$"))
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(page.get_by_test_id("forked-from")).to_have_text(run_id)
    expect(page.get_by_test_id("result")).to_contain_text(f"labelled {key}")
    fork_id = page.url.rsplit("/", 1)[-1]
    assert dev.stack.runtime.world.runs.get(fork_id).attributes["$forked_from"] == run_id
    # AND the first two steps ran once in all: the fork reused them
    assert (BODIES[f"pick:{key}"], BODIES[f"pack:{key}"], BODIES[f"label:{key}"]) == (1, 1, 2)
    # AND the link leads back to the original, still failed, whose picker offers every call
    page.get_by_test_id("forked-from").click()
    expect(page).to_have_url(re.compile(f"{run_id}$"))
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("failed")
    options = page.get_by_test_id("fork-from").locator("option")
    expect(options).to_have_text(["where it failed", "pick", "pack", "label"])


def test_a_completed_run_is_forked_from_a_chosen_step(page: Any, dev: DevStack) -> None:
    key = _key()
    FIXED.add(key)
    run_id = _start(dev, "packing", key)
    _open_run(page, dev, run_id)
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    page.get_by_test_id("fork-from").select_option(label="pack")
    page.get_by_test_id("fork").click()
    expect(page.get_by_test_id("forked-from")).to_have_text(run_id)
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    assert (BODIES[f"pick:{key}"], BODIES[f"pack:{key}"], BODIES[f"label:{key}"]) == (1, 2, 2)


def test_the_start_form_defaults_to_a_top_level_workflow_and_marks_children(page: Any, dev: DevStack) -> None:
    # GIVEN an app whose alphabetically first workflow is only ever called as a child
    page.goto(f"{dev.url}/ui/")
    choose = page.get_by_test_id("start-form").get_by_test_id("start-workflow")
    # THEN the form starts a top-level workflow by default, and the child is marked as one
    expect(choose.locator("option[value=a_packing_slip]")).to_have_text(
        "a_packing_slip (child of ship_with_slip)"
    )
    expect(choose).not_to_have_value("a_packing_slip")
    expect(choose).to_have_value("approval")


def test_a_child_run_is_a_child_in_the_gantt_the_links_and_the_list(page: Any, dev: DevStack) -> None:
    # GIVEN a parent run that awaited a child workflow
    parent = _start(dev, "ship_with_slip", f"o-{_key()}")
    _open_run(page, dev, parent)
    expect(page.get_by_test_id("run-meta")).to_contain_text("completed")
    # THEN its Gantt has a child row (not a hook) linking to the child, and its summary counts a child
    child_row = page.locator("[data-testid=gantt-row][data-kind=child]")
    expect(child_row).to_have_count(1)
    expect(page.locator("[data-testid=gantt-row][data-kind=hook]")).to_have_count(0)
    expect(page.get_by_test_id("summary")).to_contain_text("1 child")
    child = child_row.get_attribute("data-name")
    assert child is not None and child.startswith("wrun_")
    expect(page.get_by_test_id("child-link")).to_have_text(child)
    # WHEN following the link, THEN the child's page links back to its parent
    child_row.get_by_test_id("gantt-child-link").click()
    expect(page).to_have_url(f"{dev.url}/ui/#/runs/{child}")
    expect(page.get_by_test_id("parent-link")).to_have_text(parent)
    # AND the runs list marks the child run as a child
    page.goto(f"{dev.url}/ui/")
    marked = page.locator(f"[data-testid=run-row][data-run-id='{child}']").get_by_test_id("child-of")
    expect(marked).to_have_attribute("title", parent)
    expect(
        page.locator(f"[data-testid=run-row][data-run-id='{parent}']").get_by_test_id("child-of")
    ).to_have_count(0)


def test_a_held_run_shows_where_its_replay_diverged(page: Any, dev: DevStack) -> None:
    # GIVEN a running run, waiting on its hook, held as a deploy's code diverged from its log
    order = f"o-{_key()}"
    run_id = _start(dev, "approval", order)
    world = dev.stack.runtime.world
    message = "at step_x the log has step 'quote' but the code calls step 'quote_v2'"
    # (hold writes only on a running run: the run is pending until its first delivery starts it)
    held = threading.Event()
    for _ in range(400):
        if world.runs.hold(run_id, blocked_mark(world, message, 7)):
            held.set()
            break
        held.wait(0.05)
    assert held.is_set()
    # WHEN its page is opened
    _open_run(page, dev, run_id)
    # THEN it is still running, and its page says where it diverged
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("running")
    blocked = page.get_by_test_id("run-meta").get_by_test_id("blocked")
    expect(blocked).to_contain_text("at position 7")
    expect(blocked).to_contain_text("the log has 'quote' but the code calls 'quote_v2'")
