"""Workflow shapes beyond a straight line: errors raised by the workflow itself, step results that
cannot be stored, hook token conflicts between runs, timeouts and sleeps mixed with steps.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from harness.harness import Harness
from world_aws import (
    HookConflictError,
    RetryableError,
    StepFailedError,
    WorkflowFailedError,
    Workflows,
    create_hook,
    sleep,
)
from world_aws.contract.records import EventType, RunStatus


def test_exception_raised_by_the_workflow_fails_the_run_as_a_user_error(harness: Harness) -> None:
    # GIVEN a workflow that raises after a step
    app = Workflows()

    @app.step
    def load(n: int) -> int:
        return n

    @app.workflow
    async def validate(n: int) -> int:
        if await load(n) < 0:
            raise ValueError(f"negative quantity {n}")
        return n

    runtime = harness.runtime_for(app)
    # WHEN it runs
    handle = runtime.start("validate", -3)
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN the run failed with the workflow's own exception kept
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert (failed.value.error_type, failed.value.error_message) == ("ValueError", "negative quantity -3")
    assert failed.value.error_code == "USER_ERROR"


def test_step_result_that_cannot_be_stored_fails_the_step_without_retries(harness: Harness) -> None:
    # GIVEN a step returning a lock, and a workflow that handles the step failure
    app = Workflows()
    calls: list[int] = []

    @app.step(name="shapes.grab", max_retries=3)
    def grab() -> object:
        calls.append(1)
        return threading.Lock()

    @app.workflow
    async def hold() -> str:
        try:
            await grab()
        except StepFailedError as failure:
            return f"{failure.error_type}: {failure.error_message}"
        return "stored"

    runtime = harness.runtime_for(app)
    # WHEN it runs
    handle = runtime.start("hold")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the body ran once and the failure names the type and the step
    assert calls == [1]
    message = handle.result(timeout=0)
    assert message.startswith("world_aws.errors.SerializationError: ")
    assert "lock" in message.lower() and "shapes.grab" in message
    assert EventType.STEP_RETRYING not in harness.event_types(handle.run_id)


def test_hook_token_held_by_another_run_raises_hook_conflict_at_the_await(harness: Harness) -> None:
    # GIVEN two runs that create a hook with the same token
    app = Workflows()

    @app.workflow
    async def approve(order_id: str) -> str:
        try:
            return str(await create_hook(token="approve:shared"))
        except HookConflictError as conflict:
            return f"{conflict} (holder: {conflict.conflicting_run_id})"

    runtime = harness.runtime_for(app)
    first = runtime.start("approve", "o-1")
    assert harness.settle(first) is RunStatus.RUNNING
    # WHEN the second run reaches its hook
    second = runtime.start("approve", "o-2")
    assert harness.settle(second) is RunStatus.COMPLETED
    # THEN its await raised HookConflictError, which does not disclose the holder's run id
    assert (
        second.result(timeout=0)
        == "hook token 'approve:shared' is already held by another live hook (holder: None)"
    )
    # AND the holder still gets resumes
    assert EventType.HOOK_CONFLICT in harness.event_types(second.run_id)
    runtime.resume_hook("approve:shared", "yes")
    assert harness.settle(first) is RunStatus.COMPLETED
    assert first.result(timeout=0) == "yes"


def test_wait_for_times_out_a_step_that_keeps_retrying(memory_harness: Harness) -> None:
    # GIVEN a step that asks for a retry a minute later, every time, under a 90 s timeout
    h = memory_harness
    app = Workflows()
    attempts: list[float] = []

    @app.step(max_retries=10)
    def poll_partner() -> str:
        attempts.append((h.clock.now() - started).total_seconds())
        raise RetryableError("not ready", retry_after=60)

    @app.workflow
    async def wait_partner() -> str:
        try:
            return str(await asyncio.wait_for(poll_partner(), timeout=90))
        except TimeoutError:
            return "gave up"

    runtime = h.runtime_for(app)
    started = h.clock.now()
    # WHEN it runs
    handle = runtime.start("wait_partner")
    assert h.settle(handle) is RunStatus.COMPLETED
    # THEN the timeout won after 90 s; the attempts at 0 s and 60 s ran, none after the run ended
    assert handle.result(timeout=0) == "gave up"
    assert attempts == [0.0, 60.0]
    events = h.events(handle.run_id)
    assert (events[-1].created_at - started).total_seconds() == 90
    # AND the step's retry due at 120 s, delivered after the run ended, ran nothing
    h.settle()
    assert attempts == [0.0, 60.0]
    assert h.pending_messages_count() == 0
    assert len(h.events(handle.run_id)) == len(events)


def test_sleep_gathered_with_steps_waits_for_the_longest(memory_harness: Harness) -> None:
    # GIVEN a workflow that gathers a 1 h sleep with two steps
    h = memory_harness
    app = Workflows()

    @app.step
    def label(n: int) -> str:
        return f"label-{n}"

    @app.workflow
    async def batch() -> list[str | None]:
        return list(await asyncio.gather(sleep("1h"), label(1), label(2)))

    runtime = h.runtime_for(app)
    started = h.clock.now()
    # WHEN it runs
    handle = runtime.start("batch")
    assert h.settle(handle) is RunStatus.COMPLETED
    # THEN it completed an hour later with every result
    assert handle.result(timeout=0) == [None, "label-1", "label-2"]
    completed = h.events(handle.run_id)[-1]
    assert (completed.created_at - started).total_seconds() == 3600


def test_task_groups_and_created_tasks_run_their_steps_durably(harness: Harness) -> None:
    # GIVEN a workflow that structures its steps with a TaskGroup and create_task
    app = Workflows()
    ran: list[str] = []

    @app.step
    def fetch(name: str) -> str:
        ran.append(name)
        return name.upper()

    async def pair(a: str, b: str) -> str:
        return await fetch(a) + await fetch(b)

    @app.workflow
    async def assemble() -> list[str]:
        async with asyncio.TaskGroup() as group:
            first = group.create_task(pair("a", "b"))
            second = group.create_task(pair("c", "d"))
        third = asyncio.create_task(pair("e", "f"))
        return [first.result(), second.result(), await third]

    runtime = harness.runtime_for(app)
    # WHEN it runs
    handle = runtime.start("assemble")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN every step ran once and the tasks got their results
    assert handle.result(timeout=0) == ["AB", "CD", "EF"]
    assert sorted(ran) == ["a", "b", "c", "d", "e", "f"]


def test_asyncio_timeout_block_around_a_fast_step_does_not_fire(memory_harness: Harness) -> None:
    # GIVEN a step awaited inside asyncio.timeout(60)
    h = memory_harness
    app = Workflows()

    @app.step
    def quick() -> str:
        return "done"

    @app.workflow
    async def bounded() -> str:
        async with asyncio.timeout(60):
            return str(await quick())

    runtime = h.runtime_for(app)
    # WHEN it runs, and the clock later passes the timeout
    handle = runtime.start("bounded")
    assert h.settle(handle) is RunStatus.COMPLETED
    h.advance(120)
    h.settle()
    # THEN it completed with the step's result and the late timer changed nothing
    assert handle.result(timeout=0) == "done"
    assert h.event_types(handle.run_id)[-1] is EventType.RUN_COMPLETED
