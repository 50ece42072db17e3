"""Conformance: each event type takes its own data record, complete and well typed (contract §3).

``contract.shapes`` checks it.

A field the type does not take is refused as ``BadInput`` before anything is
written, not silently dropped, and the log is left as it was.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventRequest,
    EventType,
    HookCreatedData,
    RunCompletedData,
    RunCreatedData,
    RunStartedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    WaitCreatedData,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound
from world_aws.testing.conformance.support import (
    STEP,
    create_run,
    create_step,
    creation,
    new_id,
    running_step,
    start_step,
    types_of,
    write,
)


def test_step_created_with_another_types_record_is_bad_input_naming_its_own(world: World) -> None:
    run_id = create_run(world)
    before = types_of(world, run_id)
    step_id = new_id("step")
    with pytest.raises(
        BadInput,
        match=r"step_created takes StepCreatedData\(step_name, input, via_step_dispatch, owner\), "
        "not HookCreatedData",
    ):
        write(world, run_id, EventType.STEP_CREATED, step_id, HookCreatedData(token="not-a-step"))
    assert types_of(world, run_id) == before
    # Nothing of it was recorded: the same step can still be created.
    create_step(world, run_id, step_id=step_id)


def test_step_completed_with_a_failures_record_is_bad_input_and_leaves_the_step_running(world: World) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    with pytest.raises(BadInput, match="step_completed takes StepCompletedData"):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepFailedData(error=b"e"))
    assert world.steps.get(run_id, step_id).status.value == "running"


def test_run_cancelled_with_a_completions_record_is_bad_input_and_leaves_the_run_live(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="run_cancelled takes RunCancelledData"):
        write(world, run_id, EventType.RUN_CANCELLED, None, RunCompletedData(output=b"o"))
    assert not world.runs.get(run_id).status.terminal


def test_a_missing_required_field_is_named(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="wait_created needs resume_at"):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), WaitCreatedData(resume_at=None))  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="wait_created needs resume_at"):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"))  # no data: the record's defaults
    with pytest.raises(BadInput, match="step_created needs step_name"):
        write(
            world, run_id, EventType.STEP_CREATED, new_id("step"), StepCreatedData(step_name="", input=b"x")
        )


def test_a_field_of_the_wrong_type_is_named(world: World) -> None:
    run_id = create_run(world)
    before = types_of(world, run_id)
    wrong = StepCreatedData(step_name=42, input=b"x")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="step_created's step_name is a str, not int"):
        write(world, run_id, EventType.STEP_CREATED, new_id("step"), wrong)
    with pytest.raises(BadInput, match="wait_created's resume_at is a datetime, not str"):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), WaitCreatedData(resume_at="soon"))  # type: ignore[arg-type]
    assert types_of(world, run_id) == before


def test_a_time_without_a_timezone_is_bad_input_naming_it(world: World, clock: ManualClock) -> None:
    # GIVEN a running step, and a time without a timezone (a naive datetime)
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    naive = clock.now().replace(tzinfo=None) + timedelta(seconds=30)
    before = types_of(world, run_id)
    # WHEN it is a wait's resume_at, a retry's retry_after, or an append's stamp
    # THEN each is BadInput naming it, not accepted (as a time the Worlds would read back
    # differently) nor a TypeError from comparing it with the World's clock
    with pytest.raises(BadInput, match="wait_created's resume_at has no timezone"):
        write(world, run_id, EventType.WAIT_CREATED, new_id("wait"), WaitCreatedData(resume_at=naive))
    retry = StepRetryingData(error=b"e", retry_after=naive)
    with pytest.raises(BadInput, match="step_retrying's retry_after has no timezone"):
        write(world, run_id, EventType.STEP_RETRYING, step_id, retry)
    create = EventRequest(EventType.STEP_CREATED, new_id("step"), StepCreatedData(step_name=STEP, input=b"x"))
    with pytest.raises(BadInput, match="has no timezone"):
        world.events.append_after(run_id, world.events.list(run_id)[-1].position, [create], at=naive)
    # AND nothing was written: the step is still running and reports its retry with an aware time
    assert types_of(world, run_id) == before
    write(
        world, run_id, EventType.STEP_RETRYING, step_id, StepRetryingData(error=b"e", retry_after=clock.now())
    )
    start_step(world, run_id, step_id)


BAD_CREATIONS: dict[str, tuple[dict[str, object], str]] = {
    "input_none": ({"input": None}, "run_created's creation's input is bytes, not NoneType"),
    "input_str": ({"input": "text"}, "run_created's creation's input is bytes, not str"),
    "spec_version_str": ({"spec_version": "3"}, "run_created's creation's spec_version is an int, not str"),
    "attribute_int": ({"attributes": {"k": 1}}, "run_created's creation's attributes map str to str"),
    "workflow_empty": ({"workflow_name": ""}, "run_created's creation needs workflow_name"),
}


@pytest.mark.parametrize("bad", list(BAD_CREATIONS))
def test_a_run_creation_with_a_field_of_the_wrong_type_is_bad_input_naming_it(world: World, bad: str) -> None:
    # GIVEN creation data with one field missing or of the wrong type (a Python caller's
    # RunCreation is not type-checked; a World would store it as it is, or convert it, or
    # fail on it: the memory World kept {"k": 1} and the DynamoDB World read back {"k": "1"})
    change, named = BAD_CREATIONS[bad]
    made = replace(creation(), **change)  # type: ignore[arg-type]
    run_id = new_id("wrun")
    # WHEN a run is created with it, or started with it (the resilient start)
    # THEN each is BadInput naming the field, and no run exists
    with pytest.raises(BadInput, match=re.escape(named)):
        write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=made))
    with pytest.raises(BadInput, match=re.escape(named.replace("run_created", "run_started"))):
        write(world, run_id, EventType.RUN_STARTED, data=RunStartedData(creation=made))
    with pytest.raises(NotFound):
        world.runs.get(run_id)
