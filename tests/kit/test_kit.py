"""The test kit drives a workflow to its end in-process, skips time, and reads back what the log holds."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from world_aws import BadInput, NonDeterminismError, WorkflowFailedError, Workflows, create_hook, patched
from world_aws.contract.log_export import export_runs
from world_aws.contract.records import EventType, RunStatus, StepStatus
from world_aws.testing.kit import ReplayDiverged, RunNotFinished, WorkflowKit

from . import apps

KitFactory = Callable[..., WorkflowKit]


def test_a_run_finishes_with_its_sleep_skipped(workflow_kit: KitFactory) -> None:
    # GIVEN a kit for an app whose workflow sleeps 3 hours
    kit = workflow_kit(apps.app)
    began_at = kit.clock.now()
    # WHEN the test runs it
    wall = time.perf_counter()
    run = kit.run(apps.order, "o-1")
    wall = time.perf_counter() - wall
    # THEN it completed, and the kit's clock (not the test) took the 3 hours
    assert run.status is RunStatus.COMPLETED
    assert run.result == ["receipt-o-1-700", "shipped-o-1-express"]
    assert kit.clock.now() - began_at >= timedelta(hours=3)
    print(f"3-hour workflow ran in {wall * 1000:.1f} ms")  # measured, not asserted


def test_each_step_call_reads_back_its_arguments_output_and_attempts(workflow_kit: KitFactory) -> None:
    run = workflow_kit(apps.app).run(apps.order, "o-2")
    charge, ship = run.steps()
    assert (charge.name, charge.args, charge.kwargs) == (apps.charge.name, ("o-2", 700), {})
    assert (ship.args, ship.kwargs) == (("o-2",), {"express": True})
    assert charge.output == "receipt-o-2-700"
    assert (charge.status, charge.attempts, charge.errors, charge.error) == (
        StepStatus.COMPLETED,
        1,
        [],
        None,
    )
    assert run.step(apps.ship) == ship
    assert run.calls(apps.ship.name) == [ship]


def test_a_fake_replaces_a_step_and_each_failed_attempt_keeps_its_error(workflow_kit: KitFactory) -> None:
    # GIVEN a fake charge that fails twice, then succeeds
    seen: list[tuple[str, int]] = []

    def flaky(order_id: str, cents: int) -> str:
        seen.append((order_id, cents))
        if len(seen) < 3:
            raise ConnectionError(f"attempt {len(seen)} lost")
        return "receipt-fake"

    kit = workflow_kit(apps.app, fakes={apps.charge: flaky})
    # WHEN the run goes through
    run = kit.run(apps.order, "o-3")
    # THEN the fake got the workflow's arguments, and the log keeps both failed attempts
    assert seen == [("o-3", 700)] * 3
    assert run.result[0] == "receipt-fake"
    call = run.step(apps.charge)
    assert call.attempts == 3
    assert [(e.type, e.message) for e in call.errors] == [
        ("ConnectionError", "attempt 1 lost"),
        ("ConnectionError", "attempt 2 lost"),
    ]
    assert "in flaky" in call.errors[1].stack


def test_a_step_that_fails_for_good_fails_the_run_with_its_error(workflow_kit: KitFactory) -> None:
    def broken(order_id: str, *, express: bool = False) -> str:
        raise ValueError(f"no address for {order_id}")

    kit = workflow_kit(apps.app)
    kit.fake(apps.ship, broken)
    run = kit.run(apps.order, "o-4")
    assert run.status is RunStatus.FAILED
    ship = run.step(apps.ship)
    assert (ship.status, ship.attempts) == (StepStatus.FAILED, 2)
    assert ship.error is not None and ship.error.message == "no address for o-4"
    assert run.error is not None and run.error.type == "world_aws.errors.StepFailedError"
    with pytest.raises(WorkflowFailedError, match="no address for o-4"):
        _ = run.result


def test_a_retry_delay_is_skipped(workflow_kit: KitFactory) -> None:
    kit = workflow_kit(apps.app)
    began_at = kit.clock.now()
    run = kit.run(apps.patient, "k")
    assert run.step(apps.throttled).attempts == 4
    assert kit.clock.now() - began_at >= timedelta(seconds=90)  # three retries, 30 s apart


def test_a_hook_is_resumed_by_the_test(workflow_kit: KitFactory) -> None:
    # GIVEN a run waiting on its hook (no timeout)
    kit = workflow_kit(apps.app)
    run = kit.start(apps.approval, "o-5")
    assert run.status is RunStatus.RUNNING
    assert run.waiting_hooks() == ["approve:o-5"]
    # WHEN finishing it before anyone resumes, THEN the kit says what it waits on
    with pytest.raises(RunNotFinished, match=r"approve:o-5"):
        kit.finish(run)
    # WHEN the test resumes the hook
    kit.resume_hook("approve:o-5", {"by": "ada"})
    # THEN the run ends with the payload
    assert kit.finish(run).result == "approved by ada"
    assert EventType.HOOK_RECEIVED in [e.type for e in run.events()]


def test_a_hook_timeout_passes_when_the_test_advances_the_clock(workflow_kit: KitFactory) -> None:
    kit = workflow_kit(apps.app)
    run = kit.start(apps.approval, "o-6", 600)
    kit.advance("9m")
    assert run.status is RunStatus.RUNNING
    kit.advance("2m")
    assert run.status is RunStatus.COMPLETED
    assert run.result == "expired"


def test_the_kit_can_be_used_without_pytest() -> None:
    with WorkflowKit(apps.app) as kit:
        assert kit.run(apps.order, "o-7").result[0] == "receipt-o-7-700"


def test_a_workflow_that_branches_on_global_state_fails_its_test(workflow_kit: KitFactory) -> None:
    # GIVEN a workflow that picks its first step from a module-level counter
    apps.fickle_calls.clear()
    kit = workflow_kit(apps.app)
    # WHEN the kit runs it, THEN the run's cold replay takes the other step, and the test fails naming both
    both = (
        rf"log has step '{re.escape(apps.left.name)}' but the code calls step '{re.escape(apps.right.name)}'"
    )
    run = kit.start(apps.fickle)
    with pytest.raises(NonDeterminismError, match=both):
        kit.finish(run)
    # and the run itself failed so: the kit replays every continuation cold, as a new Lambda container does
    assert (run.status, run.record().error_code) == (RunStatus.FAILED, "NON_DETERMINISM")


def test_a_parent_with_children_and_a_chain_that_continues_as_new_finish_in_the_kit(
    workflow_kit: KitFactory,
) -> None:
    # GIVEN the children example: a parent of child runs, and a count that continues as new
    from examples.children import app, count_up, ship_orders

    kit = workflow_kit(app)
    # WHEN each is run to its end, THEN the results are the children's and the last run's
    shipped = kit.run(ship_orders, ["o-1", "bad-2"]).result
    assert shipped["shipped"][0] == "parcel-o-1 to the address of o-1"
    assert shipped["shipped"][1].startswith("not shipped:")
    assert kit.run(count_up, 7).result == {"limit": 7, "total": 28}


# --- the replay gate: kit.replay(path) ---------------------------------------------------


def _gate_app(version: str) -> Workflows:
    """``order``: charge, wait for "ship:<id>", then ship. v2 renames the charge (incompatible);
    v2-patched renames it behind ``patched()`` (compatible)."""
    app = Workflows()

    @app.step(name="gate.charge")
    def charge(order: str) -> str:
        return f"charged {order}"

    @app.step(name="gate.charge_v2")
    def charge_v2(order: str) -> str:
        return f"charged {order} (v2)"

    @app.step(name="gate.ship")
    def ship(order: str) -> str:
        return f"shipped {order}"

    @app.workflow
    async def order(order_id: str) -> list[str]:
        new = version == "v2" or (version == "v2-patched" and patched("charge-v2"))
        done = [await (charge_v2(order_id) if new else charge(order_id))]
        await create_hook(token=f"ship:{order_id}")
        done.append(await ship(order_id))
        if version == "v2-extra":
            done.append(await ship(order_id))  # a second shipment before the end
        return done

    return app


@pytest.fixture
def exported_runs(tmp_path: Path) -> tuple[Path, list[str]]:
    """An export of two v1 runs: one completed, one waiting for its hook."""
    with WorkflowKit(_gate_app("v1")) as kit:
        done = kit.start("order", "o-1")
        kit.resume_hook("ship:o-1", None)
        kit.finish(done)
        waiting = kit.start("order", "o-2")
        assert waiting.status is RunStatus.RUNNING
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(export_runs(kit.world, [done.run_id, waiting.run_id])))
        return path, [done.run_id, waiting.run_id]


def test_kit_replay_passes_the_code_that_made_the_runs(exported_runs: tuple[Path, list[str]]) -> None:
    path, run_ids = exported_runs
    verdicts = WorkflowKit(_gate_app("v1")).replay(path)
    assert [(v.run_id, v.ok, v.reached) for v in verdicts] == [
        (run_ids[0], True, "completed"),
        (run_ids[1], True, "waiting"),
    ]


def test_kit_replay_raises_naming_where_a_changed_workflow_diverges(
    exported_runs: tuple[Path, list[str]],
) -> None:
    path, run_ids = exported_runs
    with pytest.raises(ReplayDiverged) as raised:
        WorkflowKit(_gate_app("v2")).replay(path)
    message = str(raised.value)
    assert message.startswith("2 of 2 run(s) diverge from the code:")
    for run_id in run_ids:
        assert f"DIVERGED  {run_id}  order: at position 3 (step_" in message
    assert "the log has step 'gate.charge' but the code calls step 'gate.charge_v2'" in message


def test_kit_replay_passes_the_same_change_behind_patched(exported_runs: tuple[Path, list[str]]) -> None:
    path, _ = exported_runs
    assert all(v.ok for v in WorkflowKit(_gate_app("v2-patched")).replay(path))


def test_kit_replay_refuses_a_file_that_is_not_an_export(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    path.write_text('{"format": "world-aws.runs", "version": 1, "runs": [{"run": {}}]}')
    with pytest.raises(BadInput, match="runs\\[0\\]: the run header does not read"):
        WorkflowKit(_gate_app("v1")).replay(path)


def test_kit_replay_flags_a_completed_run_the_code_no_longer_ends_where_it_did(
    exported_runs: tuple[Path, list[str]],
) -> None:
    # GIVEN code that calls one more step before returning WHEN the export is replayed
    path, (completed, waiting) = exported_runs
    with pytest.raises(ReplayDiverged) as raised:
        WorkflowKit(_gate_app("v2-extra")).replay(path)
    # THEN the completed run diverges at its end; the waiting one (before that point) does not
    message = str(raised.value)
    assert message.startswith("1 of 2 run(s) diverge from the code:")
    end = json.loads(path.read_text())["runs"][0]["events"][-1]
    assert end["type"] == "run_completed"
    assert (
        f"DIVERGED  {completed}  order: at position {end['position']}: the log has the run's end "
        "(run_completed) but the code calls step 'gate.ship'"
    ) in message
    assert waiting not in message
