"""``stack.deploy(app)`` with runs in flight, on the in-memory World and on the embedded (moto) stack.

Runs started on deployment 1 wait on a sleep and a hook; an incompatible deployment
2 (another first step) is deployed and the hooks resumed: every old run completes
with deployment 1's result, on deployment 1's code, and runs started after the
deploy complete with deployment 2's. A run whose deployment is retired while it is
in flight replays on the newest code, which diverges: it is held (running, blocked,
where it diverged), and a deploy of code it replays on releases it and it completes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.deploy.apps import repaired_app, version_app
from world_aws.client.handle import RunHandle
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput, DeploymentInUse, NotFound
from world_aws.local.stack import LocalStack, local_stack

RUNS = 3
WAIT = 60.0


@pytest.fixture(params=["memory", "embedded"])
def stack(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    with local_stack(version_app(1), kind=request.param, run_schedules=False) as running:
        yield running


def _hook_held(stack: LocalStack, token: str) -> None:
    """Block until a live hook holds ``token`` (the run got past its step and its sleep)."""
    deadline = time.monotonic() + WAIT
    while True:
        try:
            stack.world.hooks.get_by_token(token)
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _until(predicate: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_runs_in_flight_finish_on_the_deployment_that_started_them(stack: LocalStack) -> None:
    # GIVEN runs started on deployment 1, each past its step and its sleep, waiting on a hook
    first = stack.deployment_id
    old = [stack.runtime.start("order", f"o{i}") for i in range(RUNS)]
    for i in range(RUNS):
        _hook_held(stack, f"approve:o{i}")
    assert {h.run().deployment_id for h in old} == {first}
    # and runs started on deployment 1 that are still in their sleep when it is replaced
    sleeping = [stack.runtime.start("order", f"s{i}") for i in range(RUNS)]
    # WHEN an incompatible deployment 2 is deployed, new runs start, and every hook is resumed
    second = stack.deploy(version_app(2))
    assert second != first and stack.deployment_id == second
    new = [stack.runtime.start("order", f"n{i}") for i in range(RUNS)]
    for prefix, handles in (("o", old), ("s", sleeping), ("n", new)):
        for i, _handle in enumerate(handles):
            _hook_held(stack, f"approve:{prefix}{i}")
            stack.runtime.resume_hook(f"approve:{prefix}{i}", f"yes {prefix}{i}")
    # THEN every old run completed with deployment 1's result, each new one with deployment 2's
    for i, handle in enumerate(old):
        assert handle.result(timeout=WAIT) == {
            "version": 1,
            "reserved": f"reserved o{i} by v1",
            "approval": f"yes o{i}",
        }
    for i, handle in enumerate(sleeping):
        assert handle.result(timeout=WAIT)["reserved"] == f"reserved s{i} by v1"
    for i, handle in enumerate(new):
        assert handle.result(timeout=WAIT) == {
            "version": 2,
            "reserved": f"reserved n{i} by v2",
            "approval": f"yes n{i}",
        }
    # and each run is recorded on the deployment that started it
    assert {h.run().deployment_id for h in [*old, *sleeping]} == {first}
    assert {h.run().deployment_id for h in new} == {second}
    assert stack.deployments.ids() == [first, second]


def test_retire_refuses_a_deployment_runs_are_pinned_to(stack: LocalStack) -> None:
    # GIVEN a run of deployment 1 waiting on its hook, and a deployment 2
    handle = stack.runtime.start("order", "r1")
    _hook_held(stack, "approve:r1")
    first, second = stack.deployment_id, stack.deploy(version_app(2))
    # THEN deployment 1 cannot be retired while the run is pinned to it, nor the newest ever
    assert stack.world.runs.count_live(first) == 1
    with pytest.raises(DeploymentInUse, match="1 live run"):
        stack.deployments.retire(first)
    with pytest.raises(BadInput, match="newest"):
        stack.deployments.retire(second)
    # WHEN the run ends
    stack.runtime.resume_hook("approve:r1", "ok")
    assert handle.result(timeout=WAIT)["version"] == 1
    # THEN deployment 1 retires
    assert stack.world.runs.count_live(first) == 0
    stack.deployments.retire(first)
    assert stack.deployments.ids() == [second]


def test_a_diverged_run_is_held_and_a_deploy_that_fixes_it_releases_it(stack: LocalStack) -> None:
    # GIVEN a run of deployment 1 waiting on its hook, whose deployment is then retired
    # by force (its code gone) after an incompatible deployment 2
    first = stack.deployment_id
    handle = stack.runtime.start("order", "h1")
    _hook_held(stack, "approve:h1")
    second = stack.deploy(version_app(2))
    stack.deployments.retire(first, force=True)
    # WHEN its hook is resumed: it replays on deployment 2's code, which diverges
    stack.runtime.resume_hook("approve:h1", "later")
    _until(lambda: handle.run().held, "the run to be held")
    # THEN it is held, still running, with where it diverged
    run = handle.run()
    assert run.status is RunStatus.RUNNING and run.blocked is not None
    assert (run.blocked.deployment_id, run.blocked.expected, run.blocked.actual) == (
        second,
        "order.reserve_v1",
        "order.reserve_v2",
    )
    assert run.blocked.at is not None and run.blocked.position > 0
    assert [r.run_id for r in stack.world.runs.list_blocked()] == [handle.run_id]
    # and a wake-up of a held run does not run it (it stays held, on deployment 2)
    stack.reconciler.tick()
    assert handle.run().held and handle.status() is RunStatus.RUNNING
    # WHEN a deployment whose code replays it is deployed
    third = stack.deploy(repaired_app())
    # THEN it is released onto it and completes there, past the hook resumed before
    assert handle.result(timeout=WAIT) == {
        "version": 3,
        "reserved": "reserved h1 by v1",
        "approval": "later",
        "shipped": "shipped h1 by v3",
    }
    assert handle.run().deployment_id == third
    assert stack.world.runs.list_blocked() == []


def test_an_operator_cancels_a_held_run(stack: LocalStack) -> None:
    # GIVEN a held run (its deployment retired by force, its replay diverged on the newest)
    handle: RunHandle = stack.runtime.start("order", "c1")
    _hook_held(stack, "approve:c1")
    first = stack.deployment_id
    stack.deploy(version_app(2))
    stack.deployments.retire(first, force=True)
    stack.runtime.resume_hook("approve:c1", "x")
    _until(lambda: handle.run().held, "the run to be held")
    # WHEN it is cancelled
    assert handle.cancel("operator gave up on it")
    # THEN it ends cancelled and is no longer listed as held
    assert handle.wait(timeout=WAIT).status is RunStatus.CANCELLED
    assert stack.world.runs.list_blocked() == []


def test_an_operator_forks_a_held_run_onto_the_newest_code(stack: LocalStack) -> None:
    # GIVEN a held run (its deployment retired by force, its replay diverged on the newest)
    handle: RunHandle = stack.runtime.start("order", "f1")
    _hook_held(stack, "approve:f1")
    first = stack.deployment_id
    second = stack.deploy(version_app(2))
    stack.deployments.retire(first, force=True)
    stack.runtime.resume_hook("approve:f1", "x")
    _until(lambda: handle.run().held, "the run to be held")
    # WHEN the operator forks it from its first step, where it diverged
    fork = stack.runtime.fork(handle.run_id, from_step="order.reserve_v1")
    # THEN the held run ends cancelled, and the fork runs the newest code from there
    assert handle.wait(timeout=WAIT).status is RunStatus.CANCELLED
    assert stack.world.runs.list_blocked() == []
    _hook_held(stack, "approve:f1")
    stack.runtime.resume_hook("approve:f1", "again")
    assert fork.result(timeout=WAIT) == {"version": 2, "reserved": "reserved f1 by v2", "approval": "again"}
    assert fork.run().deployment_id == second
    assert fork.run().attributes["$forked_from"] == handle.run_id
