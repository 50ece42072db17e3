"""Issue 14: size limits on step inputs and results, run results and hook payloads, on both Worlds."""

from __future__ import annotations

import pytest

from world_aws import StepFailedError, Workflows, create_hook
from world_aws.contract.records import EventType, RunStatus
from world_aws.errors import SerializationError
from world_aws.serde.codec import Serializer
from world_aws.serde.limits import Payload, PayloadLimits

from .failures import failure_of
from .harness import Harness

LIMITS = PayloadLimits(step_input=2_000, step_result=2_000, run_result=2_000, hook_payload=2_000)


def sized_app() -> Workflows:
    app = Workflows(limits=LIMITS)

    @app.step(name="limits.produce")
    def produce(size: int) -> str:
        return "x" * size

    @app.step(name="limits.consume")
    def consume(text: str) -> int:
        return len(text)

    @app.workflow
    async def big_result(size: int) -> str:
        try:
            return await produce(size)
        except StepFailedError as failed:
            return f"step failed: {failed.error_message}"

    @app.workflow
    async def big_input(size: int) -> int:
        return await consume("y" * size)

    @app.workflow
    async def big_run_result(size: int) -> str:
        return "z" * size

    @app.workflow
    async def wait_for_payload() -> object:
        return await create_hook(token="limits:hook")

    return app


def test_a_step_result_over_its_limit_fails_the_step_at_once(harness: Harness) -> None:
    runtime = harness.runtime_for(sized_app())
    handle = runtime.start("big_result", 10_000)
    assert harness.settle(handle) is RunStatus.COMPLETED
    message = handle.result(timeout=0)
    assert message.startswith("step failed: ") and "over the step result limit of 2000 bytes" in message
    types = harness.event_types(handle.run_id)
    assert EventType.STEP_FAILED in types and EventType.STEP_RETRYING not in types


def test_a_step_result_within_its_limit_is_kept(harness: Harness) -> None:
    runtime = harness.runtime_for(sized_app())
    handle = runtime.start("big_result", 1_000)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "x" * 1_000


def test_step_arguments_over_their_limit_raise_in_the_workflow_and_create_no_step(harness: Harness) -> None:
    runtime = harness.runtime_for(sized_app())
    handle = runtime.start("big_input", 10_000)
    assert "over the step input limit of 2000 bytes" in failure_of(harness, handle).error_message
    assert EventType.STEP_CREATED not in harness.event_types(handle.run_id)


def test_a_run_result_over_its_limit_fails_the_run(harness: Harness) -> None:
    runtime = harness.runtime_for(sized_app())
    failure = failure_of(harness, runtime.start("big_run_result", 10_000))
    assert failure.error_code == "SERIALIZATION_ERROR"
    assert "over the run result limit of 2000 bytes" in failure.error_message


def test_a_hook_payload_or_start_input_over_its_limit_is_refused_before_anything_is_written(
    harness: Harness,
) -> None:
    runtime = harness.runtime_for(sized_app())
    handle = runtime.start("wait_for_payload")
    assert harness.settle(handle) is RunStatus.RUNNING
    with pytest.raises(SerializationError, match="over the hook payload limit of 2000 bytes"):
        runtime.resume_hook("limits:hook", "p" * 10_000)
    assert EventType.HOOK_RECEIVED not in harness.event_types(handle.run_id)
    before = len(harness.world.runs.list().runs)
    with pytest.raises(SerializationError, match="over the step input limit of 2000 bytes"):
        runtime.start("big_input", "a" * 10_000)
    assert len(harness.world.runs.list().runs) == before


def test_a_huge_value_is_refused_while_it_is_walked_not_after_it_is_encoded() -> None:
    # GIVEN a value of ~64 MiB of strings and a 1 KiB limit
    chunks = ["c" * (1 << 20)] * 64
    serializer = Serializer(limits=PayloadLimits(step_result=1024))
    # WHEN it is serialized THEN the encoder stops at the first chunk that passes the limit
    with pytest.raises(SerializationError, match=r"at least \d+ bytes, over the step result limit of 1024"):
        serializer.dumps(chunks, context="result of step 'big'", payload=Payload.STEP_RESULT)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="hook payload limit must be at least 1 byte"):
        PayloadLimits(hook_payload=0)
