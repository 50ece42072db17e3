"""Creates without a read first (ARCHITECTURE §8): what a duplicate costs the log on DynamoDB."""

from __future__ import annotations

import pytest

from world_aws.aws.world import AwsWorld
from world_aws.contract.records import EventType, StepCreatedData
from world_aws.errors import Conflict
from world_aws.testing.conformance.support import STEP, create_run, create_step, write


def _next_position(world: AwsWorld, run_id: str) -> int:
    """Append a fresh step and return its event's position."""
    step_id = create_step(world, run_id)
    return next(e.position for e in world.events.list(run_id) if e.correlation_id == step_id)


def test_a_producer_duplicate_is_refused_at_commit_and_seals_its_position(world: AwsWorld) -> None:
    # GIVEN a step, and a second producer create of it (no read first: refused by the commit)
    run_id = create_run(world)
    step_id = create_step(world, run_id, input=b"first")
    before = world.events.list(run_id)[-1].position
    with pytest.raises(Conflict):
        create_step(world, run_id, input=b"second", step_id=step_id)
    # THEN the step is unchanged, and the refused create's position was sealed (a gap in the list)
    assert world.steps.get(run_id, step_id).input == b"first"
    assert _next_position(world, run_id) == before + 2


def test_a_consumer_re_ensure_is_refused_by_its_read_without_a_position(world: AwsWorld) -> None:
    # GIVEN a step, and a step consumer re-ensuring it from its message (contract §5.2)
    run_id = create_run(world)
    step_id = create_step(world, run_id, input=b"first")
    before = world.events.list(run_id)[-1].position
    with pytest.raises(Conflict):
        data = StepCreatedData(step_name=STEP, input=b"first", via_step_dispatch=True)
        write(world, run_id, EventType.STEP_CREATED, step_id, data)
    # THEN no position was taken: the log stays dense
    assert _next_position(world, run_id) == before + 1
