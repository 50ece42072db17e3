"""``world-aws runs delete RUN_ID`` and ``inspect``'s audit and expiry lines, on the embedded stack (moto)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from world_aws import Workflows, create_hook
from world_aws.local.dev import start_dev_stack

from .conftest import Dev, fake_aws_environment

app = Workflows(retention="7d")


@app.workflow
async def hold(order: str) -> object:
    return await create_hook(token=f"hold:{order}")


@pytest.fixture(scope="module")
def dev() -> Iterator[Dev]:
    with pytest.MonkeyPatch.context() as patch:
        fake_aws_environment(patch)
        stack = start_dev_stack(app, port=0)
        try:
            yield Dev(stack)
        finally:
            stack.stop()


def test_an_ended_run_is_deleted_by_the_cli_and_is_gone(dev: Dev) -> None:
    # GIVEN a run resumed from the CLI (an audited action) that completed
    run_id = dev.cli("start", "hold", "--arg", '"o-1"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    assert dev.cli("resume", "hold:o-1", "--payload", '"ok"').code == 0
    dev.wait_for_status(run_id, "completed")
    # THEN inspect shows who resumed it and when retention erases it
    lines = dev.cli("inspect", run_id).out.splitlines()
    assert any(line.startswith("audit     resume by local at ") for line in lines), lines
    assert any(line.startswith("expires   ") for line in lines), lines
    # WHEN it is deleted
    deleted = dev.cli("runs", "delete", run_id)
    # THEN the CLI says what went, and the run is gone
    assert deleted.code == 0, deleted.err
    assert deleted.out.startswith(f"deleted {run_id} (")
    gone = dev.cli("inspect", run_id)
    assert gone.code == 2 and "not found" in gone.err
    again = dev.cli("runs", "delete", run_id)
    assert again.code == 2 and "not found" in again.err


def test_deleting_a_live_run_exits_1_and_cancel_is_audited(dev: Dev) -> None:
    run_id = dev.cli("start", "hold", "--arg", '"o-2"').out.strip()
    dev.wait_for_event(run_id, "hook_created")
    refused = dev.cli("runs", "delete", run_id)
    assert refused.code == 1
    assert "only an ended run can be deleted (cancel it first)" in refused.err
    assert dev.cli("cancel", run_id, "--reason", "no longer needed").code == 0
    dev.wait_for_status(run_id, "cancelled")
    lines = dev.cli("inspect", run_id).out.splitlines()
    assert any(
        line.startswith("audit     cancel by local at ") and line.endswith("(no longer needed)")
        for line in lines
    ), lines
    assert dev.cli("runs", "delete", run_id).code == 0
