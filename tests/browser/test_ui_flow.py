"""The run page says what a step or a run under flow control waits for (README "Flow control")."""

from __future__ import annotations

import uuid
from typing import Any

from playwright.sync_api import expect

from world_aws.local.dev import DevStack

from .apps import release


def test_a_step_in_line_for_a_concurrency_slot_says_so_until_the_slot_frees(page: Any, dev: DevStack) -> None:
    key = uuid.uuid4().hex[:8]
    # GIVEN a run whose two calls of a step limited to one at a time per key are both due
    run_id = dev.stack.runtime.start("in_line", key).run_id
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    # THEN the page shows one call running and the other in line for the slot
    waits = page.get_by_test_id("flow-wait")
    expect(waits).to_have_count(1)
    expect(waits).to_contain_text(f"waiting for a concurrency slot of `one_at_a_time` key `{key}`")
    expect(waits).to_contain_text("1 of 1 held")
    # WHEN the running call finishes (whichever went first)
    release(f"{key}:a")
    release(f"{key}:b")
    # THEN the wait is gone and the run completes with both results
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(waits).to_have_count(0)
    expect(page.get_by_test_id("result")).to_contain_text(f"passed {key}:b")


def test_a_run_in_line_for_its_workflows_slot_shows_its_wait_and_priority(page: Any, dev: DevStack) -> None:
    key = uuid.uuid4().hex[:8]
    runtime = dev.stack.runtime
    # GIVEN a run holding its key's only slot (its step blocked), and a second run of the key
    first = runtime.start("one_run_at_a_time", key).run_id
    second = runtime.start("one_run_at_a_time", key, priority=5).run_id
    page.goto(f"{dev.url}/ui/#/runs/{second}")
    # THEN the second's page shows it pending, in line for the slot, with its priority
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("pending")
    waiting = page.get_by_test_id("run-waiting")
    expect(waiting).to_contain_text(
        f"waiting for a concurrency slot of workflow `one_run_at_a_time` key `{key}`"
    )
    expect(page.get_by_test_id("run-priority")).to_have_text("5")
    # WHEN the first run's step is let through (both runs' steps wait on one gate)
    release(f"{key}:run")
    # THEN the second runs and completes, and its wait is gone
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(waiting).to_have_count(0)
    assert runtime.get_run(first).result(timeout=30) == f"passed {key}:run"
