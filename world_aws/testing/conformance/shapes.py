"""Conformance: each event type takes exactly its data fields (SPEC §3's table, ``contract.shapes``).

A field the type does not take is refused as ``BadInput`` before anything is
written, not silently dropped, and the log is left as it was.
"""

from __future__ import annotations

import pytest

from world_aws.contract.records import EventData, EventType
from world_aws.contract.world import World
from world_aws.errors import BadInput
from world_aws.testing.conformance.support import (
    STEP,
    create_run,
    create_step,
    new_id,
    running_step,
    types_of,
    write,
)


def test_step_created_with_a_field_it_does_not_take_is_bad_input(world: World) -> None:
    run_id = create_run(world)
    before = types_of(world, run_id)
    step_id = new_id("step")
    data = EventData(step_name=STEP, input=b"in", token="not-a-step-field")
    with pytest.raises(BadInput, match="step_created takes no token"):
        write(world, run_id, EventType.STEP_CREATED, step_id, data)
    assert types_of(world, run_id) == before
    # Nothing of it was recorded: the same step can still be created.
    create_step(world, run_id, step_id=step_id)


def test_step_completed_with_an_error_is_bad_input_and_leaves_the_step_running(world: World) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    with pytest.raises(BadInput, match="step_completed takes no error"):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, EventData(output=b"r", error=b"e"))
    assert world.steps.get(run_id, step_id).status.value == "running"


def test_run_cancelled_with_an_output_is_bad_input_and_leaves_the_run_live(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="run_cancelled takes no output"):
        write(world, run_id, EventType.RUN_CANCELLED, None, EventData(reason="r", output=b"o"))
    assert not world.runs.get(run_id).status.terminal


def test_a_missing_required_field_is_named(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="wait_created needs resume_at"):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), EventData())
    with pytest.raises(BadInput, match="step_created needs step_name"):
        write(world, run_id, EventType.STEP_CREATED, new_id("step"), EventData(step_name="", input=b"x"))
