"""The step-name fence of ``step_started`` on DynamoDB (contract §3, ARCHITECTURE §2, §8).

A start that names another step than the stored one (a stale message of a step
whose id a corrected replay reused) is Conflict. The read before the reservation
names it, at the cost of that one read and no position; the commit's condition
``step_name = :name`` encodes the rule too, so a start that got past its read
is refused there and named from the ``ALL_OLD`` image.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import EventType, StepStartedData, StepStatus
from world_aws.errors import Conflict
from world_aws.testing.conformance.support import STEP, create_run, create_step, start_step, types_of, write

OTHER = "step_other"


@contextmanager
def dynamodb_calls(world: AwsWorld) -> Iterator[Counter[str]]:
    """Counts the DynamoDB operations made inside the block."""
    calls: Counter[str] = Counter()

    def count(event_name: str, **_: Any) -> None:
        calls[event_name.rsplit(".", 1)[-1]] += 1

    events = world.clients.dynamodb.meta.events
    events.register("before-call.dynamodb.*", count)
    try:
        yield calls
    finally:
        events.unregister("before-call.dynamodb.*", count)


def _stale_start(world: AwsWorld, run_id: str, step_id: str) -> None:
    write(world, run_id, EventType.STEP_STARTED, step_id, StepStartedData(step_name=OTHER))


def _next_position(world: AwsWorld, run_id: str) -> int:
    step_id = create_step(world, run_id)
    return next(e.position for e in world.events.list(run_id) if e.correlation_id == step_id)


def test_a_stale_start_is_refused_by_its_read_in_one_round_trip_without_a_position(world: AwsWorld) -> None:
    # GIVEN a pending step
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    before = world.events.list(run_id)[-1].position
    # WHEN a start naming another step arrives
    with dynamodb_calls(world) as calls, pytest.raises(Conflict):
        _stale_start(world, run_id, step_id)
    # THEN it cost the one consistent read, and no position was taken
    assert dict(calls) == {"BatchGetItem": 1}
    assert _next_position(world, run_id) == before + 1


def test_a_stale_start_that_got_past_its_read_is_refused_by_the_commit_condition(world: AwsWorld) -> None:
    # GIVEN a pending step, and a read that reports the stale start's name (as a
    # read-free start would see nothing): only the commit's condition can refuse it
    run_id = create_run(world)
    step_id = create_step(world, run_id)

    def disguise(parsed: dict[str, Any], **_: Any) -> None:
        for items in parsed.get("Responses", {}).values():
            for item in items:
                if item[keys.SK]["S"].startswith(keys.STEP_PREFIX):
                    item["step_name"] = {"S": OTHER}

    events = world.clients.dynamodb.meta.events
    events.register("after-call.dynamodb.BatchGetItem", disguise)
    try:
        # WHEN the stale start is written THEN Conflict, named from the ALL_OLD image
        with dynamodb_calls(world) as calls, pytest.raises(Conflict, match="stale"):
            _stale_start(world, run_id, step_id)
    finally:
        events.unregister("after-call.dynamodb.BatchGetItem", disguise)
    # AND no read was added to name it: read, reserve, refused commit, noop seal
    assert dict(calls) == {"BatchGetItem": 1, "UpdateItem": 1, "TransactWriteItems": 1, "PutItem": 1}
    # AND the step was not claimed, its position holds no step_started
    step = world.steps.get(run_id, step_id)
    assert (step.status, step.attempt, step.step_name) == (StepStatus.PENDING, 0, STEP)
    assert EventType.STEP_STARTED not in types_of(world, run_id)
    # AND the start naming the step itself still goes through
    start_step(world, run_id, step_id)
    assert world.steps.get(run_id, step_id).attempt == 1
