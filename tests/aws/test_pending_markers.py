"""The ``pend#`` markers behind ``steps.any_pending`` (keys.py): written and removed with the step."""

from __future__ import annotations

import pytest

from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    EventType,
    StepCompletedData,
    StepFailedData,
    StepRetryingData,
)
from world_aws.errors import Conflict
from world_aws.testing.conformance.support import create_run, create_step, running_step, write


def _markers(world: AwsWorld, run_id: str) -> set[str]:
    found = world.table.query_all(
        "pk = :pk AND begins_with(sk, :prefix)",
        {":pk": keys.run_pk(run_id), ":prefix": keys.PENDING_PREFIX},
    )
    return {str(item[keys.SK]).removeprefix(keys.PENDING_PREFIX) for item in found}


def test_a_marker_lives_from_the_steps_creation_to_its_outcome(world: AwsWorld) -> None:
    run_id = create_run(world)
    done, failed, retrying = (running_step(world, run_id) for _ in range(3))
    pending = create_step(world, run_id)
    assert _markers(world, run_id) == {done, failed, retrying, pending}
    write(world, run_id, EventType.STEP_COMPLETED, done, StepCompletedData(output=b"1"))
    write(world, run_id, EventType.STEP_FAILED, failed, StepFailedData(error=b"x"))
    write(world, run_id, EventType.STEP_RETRYING, retrying, StepRetryingData(error=b"y"))
    assert _markers(world, run_id) == {retrying, pending}
    # Markers are not steps: steps.list still returns the four steps and nothing else.
    assert {s.step_id for s in world.steps.list(run_id)} == {done, failed, retrying, pending}


def test_a_refused_create_or_outcome_leaves_the_markers_alone(world: AwsWorld) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"1"))
    with pytest.raises(Conflict):
        create_step(world, run_id, step_id=step_id)  # a duplicate create must not bring the marker back
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"2"))
    assert _markers(world, run_id) == set()
    assert world.steps.any_pending(run_id) is False


def test_any_pending_reads_at_most_two_markers_of_a_wide_fan_out(world: AwsWorld) -> None:
    # GIVEN 150 pending steps
    run_id = create_run(world)
    for _ in range(150):
        create_step(world, run_id)
    returned: list[int] = []

    def count(parsed: dict[str, object], **_: object) -> None:
        items = parsed.get("Items")
        if isinstance(items, list):
            returned.append(len(items))

    world.clients.dynamodb.meta.events.register("after-call.dynamodb.Query", count)
    # THEN the check is true, and the Query behind it brought back at most two items
    assert world.steps.any_pending(run_id) is True
    assert returned and max(returned) <= 2
