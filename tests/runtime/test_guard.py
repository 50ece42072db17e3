"""Workflow code may not read the clock, randomness or the network, nor start threads (engine/guard.py).

Each refused call fails the run with ``NON_DETERMINISM`` and a message naming the
replacement; the same call in a step, the standard library's own calls (logging
reads the clock) and a Random the user seeded are allowed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from world_aws import NonDeterminismError
from world_aws.contract.records import RunStatus
from world_aws.testing.kit import WorkflowKit

from . import guard_apps

KitFactory = Callable[..., WorkflowKit]


@pytest.mark.parametrize("name", sorted(guard_apps.CALLS))
def test_a_non_deterministic_call_in_workflow_code_fails_the_run_naming_the_replacement(
    workflow_kit: KitFactory, name: str
) -> None:
    # GIVEN a workflow that makes the call after a step that made it too
    kit = workflow_kit(guard_apps.app)
    run = kit.start(name)
    # WHEN it runs
    with pytest.raises(NonDeterminismError, match="cannot be called in workflow code"):
        kit.finish(run)
    # THEN the step's call passed, and the run failed with NON_DETERMINISM naming the replacement
    assert run.steps()[0].output == "ok"
    record = run.record()
    assert (record.status, record.error_code) == (RunStatus.FAILED, "NON_DETERMINISM")
    assert run.error is not None and guard_apps.CALLS[name][1] in run.error.message


def test_asyncio_to_thread_in_workflow_code_says_to_use_a_step(workflow_kit: KitFactory) -> None:
    kit = workflow_kit(guard_apps.app)
    with pytest.raises(NonDeterminismError, match=r"asyncio\.to_thread\(\).*do this in a step"):
        kit.run(guard_apps.to_thread)


def test_deterministic_helpers_logging_and_a_seeded_random_are_allowed(workflow_kit: KitFactory) -> None:
    run = workflow_kit(guard_apps.app).run(guard_apps.allowed)
    assert run.result[1:] == [True, True, 4]


def test_the_guard_is_off_outside_workflow_code() -> None:
    # the refused calls work as usual once the replay loop is not running them
    for call, _ in guard_apps.CALLS.values():
        call()
