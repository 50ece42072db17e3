"""The run page shows who cancelled, resumed or forked a run (issue 42 item 6), in headless Chromium."""

from __future__ import annotations

import json
import uuid
from typing import Any

from playwright.sync_api import expect

from world_aws.local.dev import DevStack

ARN = "arn:aws:sts::123456789012:assumed-role/operator/grace"


def _meta(page: Any) -> Any:
    return page.get_by_test_id("run-meta")


def test_a_cancel_from_the_page_shows_it_was_local_and_a_signed_one_shows_the_arn(
    page: Any, dev: DevStack
) -> None:
    key = uuid.uuid4().hex[:8]
    runtime = dev.stack.runtime
    # GIVEN a run cancelled from its page (the dev server: no SigV4 caller)
    local = runtime.start("approval", f"o-{key}").run_id
    page.goto(f"{dev.url}/ui/#/runs/{local}")
    page.get_by_test_id("cancel-reason").fill("duplicate")
    page.get_by_test_id("cancel").click()
    # THEN its page says who cancelled it: local, with the reason
    audit = _meta(page).get_by_test_id("audit-cancel")
    expect(audit).to_contain_text("local")
    expect(audit).to_contain_text("(duplicate)")
    expect(_meta(page)).to_contain_text("cancelled by")
    # GIVEN a run cancelled through the deployed API (the caller's ARN, as API Gateway passes it)
    signed = runtime.start("approval", f"s-{key}").run_id
    assert runtime.get_run(signed).cancel("by the operator", actor=ARN)
    page.goto(f"{dev.url}/ui/#/runs/{signed}")
    expect(_meta(page).get_by_test_id("audit-cancel")).to_contain_text(ARN)


def test_a_resume_and_a_fork_from_the_page_show_who_did_them(page: Any, dev: DevStack) -> None:
    key = uuid.uuid4().hex[:8]
    order = f"r-{key}"
    run_id = dev.stack.runtime.start("approval", order).run_id
    page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    form = page.locator(f"[data-testid=resume-form][data-token='approve:{order}']")
    form.get_by_test_id("resume-payload").fill(json.dumps({"approved": True}))
    form.get_by_role("button", name="Resume").click()
    expect(_meta(page).get_by_test_id("status")).to_have_text("completed")
    resumed = _meta(page).get_by_test_id("audit-resume")
    expect(resumed).to_contain_text("local")
    expect(_meta(page)).to_contain_text("resumed by")
    # a fork made through the deployed API names its caller on the fork's page
    fork = dev.stack.runtime.fork(run_id, "flaky_quote", actor=ARN).run_id
    page.goto(f"{dev.url}/ui/#/runs/{fork}")
    forked = _meta(page).get_by_test_id("audit-fork")
    expect(forked).to_contain_text(ARN)
    expect(forked).to_contain_text(run_id)
