"""A hook token no World can store (a DynamoDB key holds 2048 bytes) is refused at the call."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.harness import Harness
from world_aws import BadInput, Workflows, create_hook
from world_aws.contract.records import EventType, RunStatus
from world_aws.testing.kit import WorkflowKit
from world_aws.workflow.hooks import MAX_TOKEN_BYTES

app = Workflows()
KitFactory = Callable[..., WorkflowKit]


@app.workflow
async def wait_on(token: str) -> str:
    try:
        hook = create_hook(token=token)
    except BadInput as exc:
        return f"refused: {exc}"
    return str(await hook)


def test_an_oversized_token_is_refused_at_create_hook_and_the_run_goes_on(workflow_kit: KitFactory) -> None:
    run = workflow_kit(app).run(wait_on, "t" * (MAX_TOKEN_BYTES + 1))
    assert run.status is RunStatus.COMPLETED
    assert run.result == f"refused: hook token: must be 1 to {MAX_TOKEN_BYTES} bytes in UTF-8, got 1025"
    assert EventType.HOOK_CREATED not in [e.type for e in run.events()]


def test_a_token_of_the_limit_works(workflow_kit: KitFactory) -> None:
    kit = workflow_kit(app)
    token = "é" * (MAX_TOKEN_BYTES // 2)  # 1024 bytes in UTF-8
    run = kit.start(wait_on, token)
    kit.resume_hook(token, "ok")
    assert kit.finish(run).result == "ok"


def test_resume_with_an_oversized_token_is_refused_before_any_read(workflow_kit: KitFactory) -> None:
    with pytest.raises(BadInput, match="hook token: must be 1 to 1024 bytes"):
        workflow_kit(app).runtime.resume_hook("t" * 3000, "payload")


def test_on_both_worlds_a_token_of_the_limit_is_stored_and_one_past_it_refused(harness: Harness) -> None:
    # GIVEN runs waiting on a token of exactly the limit and on one a byte past it
    runtime = harness.runtime_for(app)
    limit = "é" * (MAX_TOKEN_BYTES // 2)  # 1024 bytes in UTF-8: the DynamoDB item key must hold it
    fits, too_long = runtime.start(wait_on, limit), runtime.start(wait_on, "t" * (MAX_TOKEN_BYTES + 1))
    harness.settle()
    # WHEN the first is resumed
    runtime.resume_hook(limit, "ok")
    harness.settle()
    # THEN both runs completed: the stored token worked, the long one was refused at the call
    assert fits.result(timeout=0) == "ok"
    assert too_long.result(timeout=0).startswith("refused: hook token: must be 1 to 1024 bytes")
    assert harness.status(too_long.run_id) is RunStatus.COMPLETED
