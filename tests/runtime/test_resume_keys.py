"""A caller's resume id names a resume of one run (contract §6.2: deduplicated on (run, resume id))."""

from __future__ import annotations

from tests.runtime.harness import Harness
from world_aws import Workflows, create_hook
from world_aws.contract.records import EventType, RunStatus


def approval_app() -> Workflows:
    app = Workflows()

    @app.workflow(name="rv.approve")
    async def approve(order: str) -> str:
        value: str = await create_hook(token=f"approve:{order}")
        return f"{order}:{value}"

    return app


def test_the_same_resume_id_on_two_runs_wakes_both(harness: Harness) -> None:
    # GIVEN two runs, each waiting on its own hook
    runtime = harness.runtime_for(approval_app())
    one = runtime.start("rv.approve", "o-1")
    two = runtime.start("rv.approve", "o-2")
    harness.settle()
    # WHEN a caller resumes each with the same resume id (its per-run key, e.g. "approval")
    runtime.resume_hook("approve:o-1", "yes", resume_id="approval")
    runtime.resume_hook("approve:o-2", "yes", resume_id="approval")
    # THEN both payloads are recorded (dedup is per run) and both runs complete
    assert EventType.HOOK_RECEIVED in harness.event_types(two.run_id)
    harness.settle()
    assert harness.status(one.run_id) is RunStatus.COMPLETED
    assert harness.status(two.run_id) is RunStatus.COMPLETED
