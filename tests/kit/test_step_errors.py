"""A failing step keeps the user's traceback per attempt, and the run keeps the step's error as its cause."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from world_aws.contract.records import RunStatus
from world_aws.local.stack import local_stack
from world_aws.testing.kit import WorkflowKit

from . import failing

KitFactory = Callable[..., WorkflowKit]


def test_each_failed_attempt_keeps_its_traceback_from_the_users_frames(workflow_kit: KitFactory) -> None:
    run = workflow_kit(failing.app).run(failing.validate, 5)
    call = run.step(failing.check)
    assert [e.message for e in call.errors] == ["bad value 5", "bad value 5"]  # the retry's, then the last
    for error in call.errors:
        assert error.stack.startswith("Traceback (most recent call last):")
        assert "in check" in error.stack and "in parse_quantity" in error.stack
        # the step consumer's frames are dropped
        assert not any(f"world_aws/{layer}/" in error.stack for layer in ("worker", "engine", "workflow"))


def test_the_runs_failure_carries_the_steps_error_as_its_cause(workflow_kit: KitFactory) -> None:
    run = workflow_kit(failing.app).run(failing.validate, 6)
    error = run.error
    assert run.status is RunStatus.FAILED and error is not None
    assert error.type == "world_aws.errors.StepFailedError"
    assert "in validate" in error.stack  # where the workflow awaited the step
    assert error.cause is not None
    assert (error.cause.type, error.cause.message) == ("ValueError", "bad value 6")
    assert "in parse_quantity" in error.cause.stack


def test_the_local_stack_logs_each_failure_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    # GIVEN the local stack world-aws dev runs (here on the memory World)
    caplog.set_level(logging.INFO, logger="world_aws.failures")
    with local_stack(failing.app, kind="memory") as stack:
        # WHEN a run fails after a retry
        handle = stack.runtime.start(failing.validate, 7)
        with pytest.raises(Exception, match="bad value 7"):
            handle.result(timeout=30)
    # THEN the failures logger had the retry, the step's failure and the run's, each with the user's frames
    lines = [r.getMessage() for r in caplog.records if r.name == "world_aws.failures"]
    assert [line.split(" ", 1)[0] for line in lines] == ["step_retrying", "step_failed", "run_failed"]
    assert all("ValueError: bad value 7" in line or "bad value 7" in line for line in lines)
    assert all("in parse_quantity" in line for line in lines)
