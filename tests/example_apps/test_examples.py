"""Every example in examples/ runs to completion through ``world-aws run``.

Each example runs through the CLI's ``main`` on the in-memory World (real
consumer threads, real clock: the sleeps and retry delays of the examples are a
few seconds by design), and the hooks and sleep examples once more on the
embedded default (moto). The hooks example is also resumed through the Runtime
API on a ``ManualClock``, where nothing sleeps.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from examples.hooks import app as hooks_app
from harness.harness import Harness
from harness.harness import memory_harness as fresh_memory_harness
from world_aws.cli.main import main
from world_aws.contract.records import EventType, RunStatus


def run_example(module: str, workflow: str, *args: Any, world: str = "memory") -> dict[str, Any]:
    """``world-aws run examples.<module>:app <workflow> --arg ... --json --world <world>``; the JSON."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["run", f"examples.{module}:app", workflow]
    for arg in args:
        argv += ["--arg", json.dumps(arg)]
    code = main([*argv, "--json", "--world", world, "--timeout", "60"], out=out, err=err)
    document: dict[str, Any] = json.loads(out.getvalue())
    assert code == 0, (err.getvalue(), document["error"])
    assert document["status"] == "completed"
    return document


def step_events(document: dict[str, Any], step_name: str, event_type: str) -> list[dict[str, Any]]:
    """The run's events of ``event_type`` for the step named ``step_name`` (any module prefix)."""
    ids = {
        e["correlation_id"]
        for e in document["events"]
        if e["type"] == "step_created" and str(e.get("step_name", "")).endswith(step_name)
    }
    return [e for e in document["events"] if e["type"] == event_type and e["correlation_id"] in ids]


@pytest.fixture
def fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and region, so that nothing can reach a real AWS account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_REGION", "us-east-1")


# --- fan-out and race ---------------------------------------------------------------


def test_fan_out_aggregates_twenty_steps() -> None:
    # WHEN the fan-out example runs with its default of 20
    document = run_example("fanout", "fan_out", 20)
    # THEN it aggregated the twenty squares 0..19, each computed by its own step
    assert document["result"] == {"count": 20, "sum": sum(i * i for i in range(20)), "max": 361}
    created = [e for e in document["events"] if e["type"] == "step_created"]
    assert len(created) == 20


def test_race_takes_the_quote_the_log_recorded_first() -> None:
    # WHEN the race runs
    document = run_example("fanout", "race", "lamp")
    # THEN the quick carrier won, and it is the first quote whose completion the log holds
    assert document["result"]["winner"] == {"carrier": "quick", "item": "lamp", "cents": 700}
    completions = [e for e in document["events"] if e["type"] == "step_completed"]
    quick = step_events(document, "quick_quote", "step_completed")
    assert completions[0] == quick[0]


# --- retries ------------------------------------------------------------------------


def test_retries_recover_a_flaky_step_and_fall_back_after_a_fatal_failure() -> None:
    # WHEN the retries example runs
    document = run_example("retries", "settle_invoice", "inv-7")
    result = document["result"]
    # THEN the flaky step succeeded on its third attempt, after two retries
    assert result["details"] == {"invoice": "inv-7", "cents": 4200, "fetched_on_attempt": 3}
    assert len(step_events(document, "fetch_invoice", "step_retrying")) == 2
    # AND the rate-limited step succeeded on its second attempt
    assert result["credit"] == "credit-inv-7-4200"
    assert len(step_events(document, "reserve_credit", "step_retrying")) == 1
    # AND the expired card failed at once (one attempt, no retry) and the workflow fell back
    assert step_events(document, "charge_card", "step_retrying") == []
    assert len(step_events(document, "charge_card", "step_failed")) == 1
    assert result["payment"].startswith("mailed inv-7 for payment by bank transfer")
    assert "card expired-4242 has expired" in result["payment"]


# --- sleep --------------------------------------------------------------------------


def assert_onboarded(document: dict[str, Any]) -> None:
    result = document["result"]
    # THEN it slept at least 2 s by its own clock, in a durable wait
    assert result["slept_seconds"] >= 2.0
    assert any(e["type"] == "wait_completed" for e in document["events"])
    # AND the payment had not settled within 1 s, so a reminder went out before "paid"
    assert result["reminders"] == ["to ada: reminder: your payment is still pending"]
    assert result["payment"] == "paid"
    assert result["welcome"] == "to ada: welcome aboard"


def test_sleep_example_sleeps_then_reminds() -> None:
    assert_onboarded(run_example("sleep", "onboard", "ada"))


def test_sleep_example_completes_on_the_embedded_default(fake_aws: None) -> None:
    assert_onboarded(run_example("sleep", "onboard", "ada", world="embedded"))


# --- hooks --------------------------------------------------------------------------


def assert_published_without_review(document: dict[str, Any], doc: str) -> None:
    # THEN nobody resumed the hook, so the timeout's fallback published it unreviewed
    assert document["result"] == {
        "doc": doc,
        "status": "published without review",
        "reviews": [],
        "notice": f"{doc} published without review (0 review(s))",
    }
    types = [e["type"] for e in document["events"]]
    assert "hook_created" in types and "hook_received" not in types


def test_hooks_example_falls_back_when_nobody_resumes() -> None:
    assert_published_without_review(run_example("hooks", "collect_reviews", "doc-1"), "doc-1")


def test_hooks_example_completes_on_the_embedded_default(fake_aws: None) -> None:
    assert_published_without_review(
        run_example("hooks", "collect_reviews", "doc-1", world="embedded"), "doc-1"
    )


@pytest.fixture
def harness() -> Iterator[Harness]:
    """The runtime suite's harness over an in-memory World on a ``ManualClock``."""
    with fresh_memory_harness() as built:
        yield built


def test_hooks_example_publishes_the_reviews_it_was_resumed_with(harness: Harness) -> None:
    # GIVEN a run of the hooks example waiting for two reviews, with a 10-minute timeout
    runtime = harness.runtime_for(hooks_app)
    handle = runtime.start("collect_reviews", "doc-2", 2, 600)
    harness.drain()
    assert handle.status() is RunStatus.RUNNING
    assert harness.world.hooks.get_by_token("review:doc-2").token == "review:doc-2"
    # WHEN two reviewers resume its token, a minute apart
    runtime.resume_hook("review:doc-2", {"by": "ada", "verdict": "ship it"})
    harness.drain()
    harness.advance(60)
    runtime.resume_hook("review:doc-2", {"by": "bob", "verdict": "fix the typo"})
    # THEN it completes with both reviews, in resume order, before its timeout
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == {
        "doc": "doc-2",
        "status": "published",
        "reviews": [{"by": "ada", "verdict": "ship it"}, {"by": "bob", "verdict": "fix the typo"}],
        "notice": "doc-2 published (2 review(s))",
    }
    assert EventType.WAIT_COMPLETED not in harness.event_types(handle.run_id)


def test_hooks_example_publishes_a_partial_review_when_time_runs_out(harness: Harness) -> None:
    # GIVEN a run of the hooks example waiting for two reviews within 10 minutes
    runtime = harness.runtime_for(hooks_app)
    handle = runtime.start("collect_reviews", "doc-3", 2, 600)
    harness.drain()
    # WHEN one reviewer resumes it, and then the ten minutes pass
    runtime.resume_hook("review:doc-3", {"by": "ada", "verdict": "ship it"})
    harness.drain()
    assert handle.status() is RunStatus.RUNNING
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the timeout fired and it published with the one review it had
    result = handle.result(timeout=0)
    assert result["status"] == "published with partial review"
    assert result["reviews"] == [{"by": "ada", "verdict": "ship it"}]
    assert EventType.WAIT_COMPLETED in harness.event_types(handle.run_id)


# --- child workflows and continue-as-new ----------------------------------------------


def test_children_example_ships_each_order_in_a_child_run() -> None:
    # WHEN the parent ships three orders, one of which cannot be packed
    document = run_example("children", "ship_orders", ["o-1", "bad-2", "o-3"])
    # THEN each order was a child run; the failed child raised in the parent, which caught it
    shipped = document["result"]["shipped"]
    assert shipped[0] == "parcel-o-1 to the address of o-1"
    assert shipped[1].startswith("not shipped:") and "bad-2 has no items" in shipped[1]
    types = [e["type"] for e in document["events"]]
    assert types.count("hook_created") == types.count("hook_received") == 3


def test_children_example_counts_up_across_runs_that_continue_as_new() -> None:
    # WHEN count_up adds 1..10, three numbers per run
    document = run_example("children", "count_up", 10)
    # THEN the result is the last run's, and the first run's log holds only its three steps
    assert document["result"] == {"limit": 10, "total": 55}
    assert [e["type"] for e in document["events"]].count("step_completed") == 3


# --- schedules ----------------------------------------------------------------------


def test_the_scheduled_examples_run_to_completion_when_started_by_hand() -> None:
    digest = run_example("scheduled", "digest")
    assert digest["result"]["sent"] == "sent 3 lines"
    assert run_example("scheduled", "heartbeat", "api")["result"] == "api ok"


# --- step timeouts ------------------------------------------------------------------


def test_the_timeouts_example_gives_up_on_the_hung_attempt_and_completes_with_the_retry() -> None:
    document = run_example("timeouts", "quote", "EURUSD")
    assert document["result"] == {"pair": "EURUSD", "price": 1.0842}
    (retrying,) = step_events(document, "fetch_price", "step_retrying")
    assert "ran past its timeout of 1 s" in json.dumps(retrying)
    assert len(step_events(document, "fetch_price", "step_completed")) == 1
