"""The last completer of a fan-out whose last branches finish together (contract §5.1 step 6).

Two branches: a dispatched step B, and a step A that is dispatched, or inline and then
handed to a retry message (an owned ``step_retrying``: its owner acks and no longer
continues for it). B's outcome is committed; A's is reserved, its commit in flight.
B's check must see A pending (its ``pend#`` marker), or else B's claim covers A's
position and B replays without A's outcome, and A's own claim is then refused: nobody
would continue the run until the reconciler. These are the World calls of
``StepExecutor._execute`` / ``_maybe_continue`` for the two branches, with A's commit
held between its reservation and its ``TransactWriteItems``.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    EventRequest,
    EventType,
    StepCompletedData,
    StepCreatedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
)
from world_aws.testing.conformance.appended import OWNER, owned_create
from world_aws.testing.conformance.support import STEP, create_run, new_id

WAIT = 30.0


def _dispatched(world: AwsWorld, run_id: str) -> str:
    step_id = new_id("step")
    world.events.create(
        run_id, EventRequest(EventType.STEP_CREATED, step_id, StepCreatedData(step_name=STEP, input=b"in"))
    )
    world.events.create(
        run_id, EventRequest(EventType.STEP_STARTED, step_id, StepStartedData(step_name=STEP))
    )
    return step_id


def _inline_then_retried_by_message(world: AwsWorld, run_id: str) -> str:
    step_id = new_id("step")
    world.events.create(run_id, owned_create(step_id))  # inline: created and started by its owner
    world.events.create(  # its attempt failed: handed to a retry message, the owner acks
        run_id, EventRequest(EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"boom", owner=OWNER))
    )
    # the retry message's consumer claims it
    world.events.create(
        run_id, EventRequest(EventType.STEP_STARTED, step_id, StepStartedData(step_name=STEP))
    )
    return step_id


def _complete(world: AwsWorld, run_id: str, step_id: str) -> int:
    result = world.events.create(
        run_id, EventRequest(EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out"))
    )
    assert result.event is not None
    return result.event.position


@pytest.mark.parametrize("late", ["dispatched", "inline_retried_by_message"])
def test_two_branches_finishing_together_leave_one_continuation_that_sees_both(
    world: AwsWorld, monkeypatch: pytest.MonkeyPatch, late: str
) -> None:
    # GIVEN a running run whose last two branches are a dispatched step B and a step A
    run_id = create_run(world)
    b = _dispatched(world, run_id)
    a = _dispatched(world, run_id) if late == "dispatched" else _inline_then_retried_by_message(world, run_id)
    # AND B's outcome is committed
    b_position = _complete(world, run_id, b)
    # AND A's outcome is reserved, its commit held (its consumer's TransactWriteItems in flight)
    commit = world.sequencer.commit
    reserved, release = threading.Event(), threading.Event()

    def held_commit(*args: Any, **kwargs: Any) -> Any:
        reserved.set()
        assert release.wait(WAIT)
        return commit(*args, **kwargs)

    monkeypatch.setattr(world.sequencer, "commit", held_commit)
    a_position: list[int] = []
    writer = threading.Thread(target=lambda: a_position.append(_complete(world, run_id, a)))
    writer.start()
    assert reserved.wait(WAIT)
    monkeypatch.setattr(world.sequencer, "commit", commit)
    # WHEN B does its last-completer check, claims and replays the log
    b_sees_pending = world.steps.any_pending(run_id, besides=b)
    b_claim = None if b_sees_pending else world.runs.claim_continuation(run_id, after=b_position, claimer=b)
    b_read = [e for e in world.events.list(run_id) if e.correlation_id == a] if b_claim is not None else []
    b_saw_a_done = any(e.type is EventType.STEP_COMPLETED for e in b_read)
    # AND A's commit lands, and A does its check and claims
    release.set()
    writer.join(WAIT)
    assert a_position and world.steps.get(run_id, a).status is StepStatus.COMPLETED
    a_sees_pending = world.steps.any_pending(run_id, besides=a)
    a_claim = (
        None if a_sees_pending else world.runs.claim_continuation(run_id, after=a_position[0], claimer=a)
    )
    # THEN some branch continues the run having seen both outcomes
    b_continues_whole = b_claim is not None and b_saw_a_done
    assert b_continues_whole or a_claim is not None, (
        f"no continuation: B pending={b_sees_pending} claimed={b_claim is not None} "
        f"saw A done={b_saw_a_done}; "
        f"A pending={a_sees_pending} claimed={a_claim is not None}"
    )
