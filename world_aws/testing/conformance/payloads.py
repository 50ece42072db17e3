"""Conformance: payloads come back byte for byte, inline or not (contract §3.3, §7.3), and ``resolve_data``.

Sizes straddle the 128 KiB inline limit (131072 stays inline, 131073 does not
on the AWS World) and go well past DynamoDB's 400 KB item limit (3 MB).
"""

from __future__ import annotations

import hashlib
import random

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.records import (
    EventType,
    HookCreatedData,
    HookReceivedData,
    ResolveData,
    RunCompletedData,
    RunCreatedData,
    RunFailedData,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    payload_fields,
    without_payloads,
)
from world_aws.contract.world import World
from world_aws.testing.conformance.support import (
    create_hook,
    create_run,
    create_step,
    create_wait,
    end_run,
    new_id,
    receive_hook,
    running_step,
    write,
)


def _noise(size: int) -> bytes:
    return random.Random(size).randbytes(size)


PAYLOADS = {
    "empty": b"",
    "nul_bytes": b"\x00\x00a\x00" + bytes(range(256)) + b"\x00",
    "inline_max": _noise(MAX_INLINE_PAYLOAD_BYTES),
    "inline_max_plus_1": _noise(MAX_INLINE_PAYLOAD_BYTES + 1),
    "3mb": _noise(3 * 1024 * 1024),
}
payload_sizes = pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))


def assert_same_bytes(got: bytes | None, expected: bytes) -> None:
    """Byte-for-byte equality with a short failure message (no multi-megabyte diff)."""
    assert got is not None, "payload missing"
    assert type(got) is bytes, f"payload came back as {type(got).__name__}"
    digest = hashlib.sha256(got).hexdigest()[:12]
    want = hashlib.sha256(expected).hexdigest()[:12]
    assert (len(got), digest) == (len(expected), want), "payload changed on the round trip"


@payload_sizes
def test_run_input_round_trips_byte_for_byte(world: World, payload: bytes) -> None:
    run_id = create_run(world, input=payload)
    assert_same_bytes(world.runs.get(run_id).input, payload)
    creation = world.events.list(run_id)[0].data_as(RunCreatedData).creation
    assert creation is not None
    assert_same_bytes(creation.input, payload)


@payload_sizes
def test_step_input_round_trips_byte_for_byte(world: World, payload: bytes) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id, input=payload)
    assert_same_bytes(world.steps.get(run_id, step_id).input, payload)
    assert_same_bytes(world.steps.list(run_id)[0].input, payload)
    assert_same_bytes(world.events.list(run_id)[-1].data_as(StepCreatedData).input, payload)


@payload_sizes
def test_step_output_round_trips_byte_for_byte(world: World, payload: bytes) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=payload))
    assert_same_bytes(world.steps.get(run_id, step_id).output, payload)
    assert_same_bytes(world.events.list(run_id)[-1].data_as(StepCompletedData).output, payload)


@payload_sizes
def test_hook_payload_round_trips_byte_for_byte(world: World, payload: bytes) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    resume_id = new_id("resume")
    receive_hook(world, run_id, hook.hook_id, payload, resume_id=resume_id)
    assert_same_bytes(world.events.list(run_id)[-1].data_as(HookReceivedData).payload, payload)
    # the deduplicated answer carries the same bytes
    again = receive_hook(world, run_id, hook.hook_id, payload, resume_id=resume_id).event
    assert again is not None
    assert_same_bytes(again.data_as(HookReceivedData).payload, payload)


@pytest.mark.parametrize(
    "payload", [PAYLOADS["nul_bytes"], PAYLOADS["inline_max_plus_1"]], ids=["small", "large"]
)
def test_outputs_errors_and_metadata_round_trip_byte_for_byte(world: World, payload: bytes) -> None:
    # GIVEN every other payload field set to the same bytes
    run_id = create_run(world)
    failed = running_step(world, run_id)
    write(world, run_id, EventType.STEP_FAILED, failed, StepFailedData(error=payload))
    retried = running_step(world, run_id)
    write(world, run_id, EventType.STEP_RETRYING, retried, StepRetryingData(error=payload))
    token = new_id("tok")
    create_hook(world, run_id, token, metadata=payload)
    write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=payload))
    failed_run = create_run(world)
    write(world, failed_run, EventType.RUN_FAILED, data=RunFailedData(error=payload, error_code="E"))
    # THEN each reads back byte for byte, from the entities and from the log
    assert_same_bytes(world.steps.get(run_id, failed).error, payload)
    assert_same_bytes(world.steps.get(run_id, retried).error, payload)
    assert_same_bytes(world.runs.get(run_id).output, payload)
    assert_same_bytes(world.runs.get(failed_run).error, payload)
    log = world.events.list(run_id)
    by_type = {event.type: event for event in log}
    assert_same_bytes(by_type[EventType.STEP_FAILED].data_as(StepFailedData).error, payload)
    assert_same_bytes(by_type[EventType.STEP_RETRYING].data_as(StepRetryingData).error, payload)
    assert_same_bytes(by_type[EventType.HOOK_CREATED].data_as(HookCreatedData).metadata, payload)
    assert_same_bytes(by_type[EventType.RUN_COMPLETED].data_as(RunCompletedData).output, payload)
    assert_same_bytes(world.events.list(failed_run)[-1].data_as(RunFailedData).error, payload)


def test_hook_metadata_round_trips_through_get_by_token(world: World) -> None:
    run_id = create_run(world)
    token = new_id("tok")
    create_hook(world, run_id, token, metadata=PAYLOADS["inline_max_plus_1"])
    assert_same_bytes(world.hooks.get_by_token(token).metadata, PAYLOADS["inline_max_plus_1"])
    assert_same_bytes(world.hooks.list(run_id)[0].metadata, PAYLOADS["inline_max_plus_1"])


def test_resolve_data_none_strips_payloads(world: World, clock: ManualClock) -> None:
    # GIVEN a log with every kind of payload, small and large
    big = PAYLOADS["inline_max_plus_1"]
    run_id = create_run(world, input=big, attributes={"k": "v"})
    done = running_step(world, run_id, input=b"small-in")
    write(world, run_id, EventType.STEP_COMPLETED, done, StepCompletedData(output=big))
    failed = running_step(world, run_id, input=big)
    write(world, run_id, EventType.STEP_FAILED, failed, StepFailedData(error=b"err"))
    hook = create_hook(world, run_id, new_id("tok"), metadata=b"meta").hook
    assert hook is not None
    receive_hook(world, run_id, hook.hook_id, big)
    create_wait(world, run_id, clock.now())
    end_run(world, run_id)
    # WHEN the log is read with ResolveData.NONE
    full = world.events.list(run_id)
    bare = world.events.list(run_id, resolve_data=ResolveData.NONE)
    # THEN the same events come back, each with its payload fields left out
    assert [(e.position, e.type, e.correlation_id) for e in bare] == [
        (e.position, e.type, e.correlation_id) for e in full
    ]
    assert [e.data for e in bare] == [without_payloads(e.data) for e in full]
    left_out = [getattr(e.data, name) for e in bare for name in payload_fields(type(e.data))]
    assert left_out and all(value is None for value in left_out)
    assert world.events.list(run_id, after=3, resolve_data=ResolveData.NONE) == bare[3:]


def test_runs_get_with_resolve_data_none_leaves_payloads_out(world: World) -> None:
    run_id = create_run(world, input=b"in")
    write(world, run_id, EventType.RUN_FAILED, data=RunFailedData(error=b"err", error_code="E_CODE"))
    run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
    assert (run.input, run.output, run.error) == (None, None, None)
    assert (run.run_id, run.error_code, run.status) == (run_id, "E_CODE", world.runs.get(run_id).status)


def test_steps_get_and_list_with_resolve_data_none_leave_payloads_out(world: World) -> None:
    run_id = create_run(world)
    step_id = running_step(world, run_id, input=b"in")
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out"))
    for step in (
        world.steps.get(run_id, step_id, resolve_data=ResolveData.NONE),
        world.steps.list(run_id, resolve_data=ResolveData.NONE)[0],
    ):
        assert (step.input, step.output, step.error) == (None, None, None)
        assert (step.step_id, step.attempt, step.status) == (
            step_id,
            1,
            world.steps.get(run_id, step_id).status,
        )
