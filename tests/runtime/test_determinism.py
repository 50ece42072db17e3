"""Issue 5: what workflow code sees is deterministic, and code that no longer matches its log fails.

contract §8.1, §8.3, §8.6: ``now()``, ``random()`` and ``uuid4()`` repeat on every
replay of a run; ``get_workflow_metadata()`` names the run; a step called
outside a workflow simply runs; an unserializable step argument is a clear
error at the call site; a step renamed between replays fails the run with
``NON_DETERMINISM``, naming both names.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from harness.harness import Harness
from world_aws import (
    SerializationError,
    WorkflowFailedError,
    Workflows,
    create_hook,
    get_workflow_metadata,
    now,
    random,
    uuid4,
)
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import QueueName
from world_aws.engine.replay import Completed

from .golden import replay


def stamp_app(
    seen: list[tuple[str, datetime, float, uuid.UUID]], step_body: Callable[[], object] = lambda: None
) -> Workflows:
    app = Workflows()

    @app.step
    def wait_a_bit(seconds: float) -> None:
        step_body()

    @app.workflow
    async def stamp() -> dict[str, Any]:
        before = (now(), random(), uuid4())
        seen.append(("before", *before))
        await wait_a_bit(30)
        after = (now(), random(), uuid4())
        seen.append(("after", *after))
        meta = get_workflow_metadata()
        return {"before": before, "after": after, "run_id": meta.run_id, "workflow": meta.workflow_name}

    return app


@pytest.mark.dispatched  # the step goes by message, so a second, cold handler continues the run
def test_now_random_and_uuid4_repeat_on_every_replay(harness: Harness) -> None:
    # GIVEN a workflow that reads now(), random() and uuid4() before and after a step
    seen: list[tuple[str, datetime, float, uuid.UUID]] = []
    app = stamp_app(seen, lambda: harness.clock.advance(30))
    first = harness.runtime_for(app)
    handle = first.start("stamp")
    harness.drain(queues=[QueueName.WORKFLOW])
    # WHEN the step takes 30 s, and another handler (cold: it replays from the start) continues the run
    runtime = harness.runtime_for(app)
    assert harness.settle(handle, runtime=runtime) is RunStatus.COMPLETED
    # THEN every replay saw the same values before the step
    befores = [s[1:] for s in seen if s[0] == "before"]
    assert len(befores) == 2
    assert befores[0] == befores[1]
    result = handle.result(timeout=0)
    assert result["before"] == befores[0]
    # AND now() is the time of the latest event replayed: the start, then the step's completion
    events = harness.events(handle.run_id)
    started = next(e for e in events if e.type is EventType.RUN_STARTED)
    completed = next(e for e in events if e.type is EventType.STEP_COMPLETED)
    assert result["before"][0] == started.created_at
    assert result["after"][0] == completed.created_at == started.created_at + timedelta(seconds=30)
    # AND the random values are real ones (not a constant), and a fresh replay of the log agrees
    assert result["before"][1] != result["after"][1]
    assert result["before"][2].version == 4
    outcome = replay(stamp_app([]), harness.world.runs.get(handle.run_id), events)
    assert isinstance(outcome, Completed)
    assert runtime.app.serializer.loads(outcome.output) == result
    # AND the workflow's metadata named this run
    assert (result["run_id"], result["workflow"]) == (handle.run_id, "stamp")


def test_two_runs_get_different_random_values(memory_harness: Harness) -> None:
    # GIVEN two runs of the same workflow
    runtime = memory_harness.runtime_for(stamp_app([]))
    first, second = runtime.start("stamp"), runtime.start("stamp")
    # WHEN both complete
    memory_harness.settle()
    # THEN each run has its own sequence
    a, b = first.result(timeout=0), second.result(timeout=0)
    assert a["before"][1:] != b["before"][1:]


def test_step_called_outside_a_workflow_runs_directly() -> None:
    # GIVEN an async and a sync step of an app bound to no World
    app = Workflows()

    @app.step
    async def double(x: int) -> int:
        return 2 * x

    @app.step
    def triple(x: int) -> int:
        return 3 * x

    # WHEN they are called outside any workflow THEN each is its own function: the async one
    # gives its coroutine, the sync one runs at the call and gives its result (not a coroutine)
    assert asyncio.run(double(21)) == 42  # type: ignore[arg-type]
    assert triple(5) == 15  # type: ignore[comparison-overlap]
    # AND the workflow-only helpers say where they belong
    with pytest.raises(RuntimeError, match="inside a workflow"):
        get_workflow_metadata()


def test_a_step_body_calls_a_sync_step_as_a_plain_function(memory_harness: Harness) -> None:
    # GIVEN a durable step whose body calls another (sync) step, outside any workflow code
    app = Workflows()

    @app.step
    def tax(cents: int) -> int:
        return cents // 5

    @app.step
    def total(cents: int) -> int:
        return cents + tax(cents)  # type: ignore[operator]

    @app.workflow
    async def bill(cents: int) -> int:
        return await total(cents)

    # WHEN the workflow runs
    handle = memory_harness.runtime_for(app).start("bill", 100)
    memory_harness.settle()
    # THEN the inner call ran at once and gave its value: one durable step, not two
    assert handle.result(timeout=0) == 120
    steps = [e for e in handle.events() if e.type is EventType.STEP_CREATED]
    assert len(steps) == 1


def test_unserializable_step_argument_is_a_clear_error_at_the_call_site(harness: Harness) -> None:
    # GIVEN a workflow that passes a lock to a step, and catches what the call raises
    app = Workflows()

    @app.step
    def archive(what: object) -> None:
        raise AssertionError("never runs")

    @app.workflow
    async def keep() -> str:
        try:
            await archive(threading.Lock())
        except SerializationError as err:
            return str(err)
        return "no error"

    @app.workflow
    async def keep_uncaught() -> None:
        await archive({"lock": threading.Lock()})

    runtime = harness.runtime_for(app)
    # WHEN each runs
    caught, uncaught = runtime.start("keep"), runtime.start("keep_uncaught")
    harness.settle()
    # THEN the error raised at the call names the type and the step
    message = caught.result(timeout=0)
    assert "lock" in message.lower()
    assert archive.name in message
    # AND uncaught, it fails the run with that error; no step was ever created
    with pytest.raises(WorkflowFailedError) as failed:
        uncaught.result(timeout=0)
    assert failed.value.error_type.endswith("SerializationError")
    assert archive.name in failed.value.error_message
    for handle in (caught, uncaught):
        assert EventType.STEP_CREATED not in harness.event_types(handle.run_id)


def renaming_app(step_name: str) -> Workflows:
    app = Workflows()

    @app.step(name=step_name)
    def check(doc: str) -> str:
        return f"checked {doc}"

    @app.workflow
    async def review(doc: str) -> list[str]:
        checked = await check(doc)
        approval = await create_hook(token=f"review:{doc}")
        return [checked, approval]

    return app


def test_step_renamed_between_replays_fails_the_run_naming_both_steps(harness: Harness) -> None:
    # GIVEN a run that completed step "review.check" and waits on a hook
    old = harness.runtime_for(renaming_app("review.check"))
    handle = old.start("review", "doc-9")
    assert harness.settle(handle) is RunStatus.RUNNING
    # WHEN a deployment that renamed the step continues it
    new = harness.runtime_for(renaming_app("review.verify"))
    new.resume_hook("review:doc-9", "approved")
    assert harness.settle(handle, runtime=new) is RunStatus.FAILED
    # THEN the run failed as non-deterministic, naming the logged and the called step
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_code == "NON_DETERMINISM"
    assert "'review.check'" in failed.value.error_message
    assert "'review.verify'" in failed.value.error_message
