"""``world_aws.patched``: a deploy moves runs in flight onto new code deterministically.

Version 1 of ``checkout`` charges, waits for a "go" hook, ships and waits for a
"done" hook. Version 2 gift-wraps before shipping, behind ``patched("gift-wrap")``.
A deploy is a new ``Runtime`` for version 2 on the same World taking the deliveries
(``Harness.runtime_for``): runs started on version 1 then replay on version 2.
Hooks wake at once on every World, so these run on memory and on moto.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.harness import Harness
from world_aws import Workflows, create_hook, deprecated_patch, patched, sleep
from world_aws.contract.records import EventType, PatchAppliedData, RunStatus
from world_aws.engine.replay import ERROR_CODE_NON_DETERMINISM
from world_aws.errors import BadInput, NonDeterminismError
from world_aws.testing.kit import check_replay
from world_aws.worker.config import RuntimeConfig

DISPATCHED = RuntimeConfig(max_inline_steps=0)
CONFIGS = {"inline": None, "dispatched": DISPATCHED}


def _app(version: str, ran: list[str]) -> Workflows:
    """``checkout`` as ``version`` ships it: "v1", "v2" (patched), "v2-unpatched", "v3" (deprecated)."""
    app = Workflows()

    @app.step
    def charge(order: str, cents: int) -> str:
        ran.append(f"charge {order}")
        return f"charged {cents}"

    @app.step
    def wrap(order: str) -> str:
        ran.append(f"wrap {order}")
        return "wrapped"

    @app.step
    def ship(order: str) -> str:
        ran.append(f"ship {order}")
        return "shipped"

    @app.workflow
    async def checkout(order: str) -> list[Any]:
        done = [await charge(order, 500)]
        done.append(await create_hook(token=f"go:{order}"))
        if version == "v2":
            if patched("gift-wrap"):
                done.append(await wrap(order))
        elif version == "v2-unpatched":
            done.append(await wrap(order))
        elif version == "v3":
            deprecated_patch("gift-wrap")
            done.append(await wrap(order))
        done.append(await ship(order))
        done.append(await create_hook(token=f"done:{order}"))
        return done

    return app


def _resume(h: Harness, token: str, payload: str) -> None:
    h.runtime.resume_hook(token, payload)


def _markers(h: Harness, run_id: str) -> list[str]:
    return [
        e.data_as(PatchAppliedData).change_id for e in h.events(run_id) if e.type is EventType.PATCH_APPLIED
    ]


@pytest.mark.parametrize("mode", sorted(CONFIGS))
def test_patched_moves_a_waiting_run_onto_the_new_branch_and_keeps_a_passed_one_on_the_old(
    harness: Harness, mode: str
) -> None:
    h = harness
    ran: list[str] = []
    v1 = h.runtime_for(_app("v1", ran), CONFIGS[mode])
    # GIVEN on version 1: a run past the patched point (shipped, waiting for "done") ...
    passed = v1.start("checkout", "o-passed")
    assert h.settle(passed) is RunStatus.RUNNING
    _resume(h, "go:o-passed", "go")
    assert h.settle(passed) is RunStatus.RUNNING
    # ... and a run before it (charged, waiting for "go")
    waiting = v1.start("checkout", "o-waiting")
    assert h.settle(waiting) is RunStatus.RUNNING
    assert ran == ["charge o-passed", "ship o-passed", "charge o-waiting"]
    # WHEN version 2 is deployed (it takes every delivery from now on) and the hooks are resumed
    v2_app = _app("v2", ran)
    v2 = h.runtime_for(v2_app, CONFIGS[mode])
    for order in ("o-passed", "o-waiting"):
        _resume(h, f"go:{order}", "go")
        h.settle(waiting)
        _resume(h, f"done:{order}", "done")
    assert h.settle(passed) is RunStatus.COMPLETED
    assert h.settle(waiting) is RunStatus.COMPLETED
    # THEN the passed run kept the old branch (no wrap, no marker), the waiting one took the new
    assert passed.result(timeout=0) == ["charged 500", "go", "shipped", "done"]
    assert waiting.result(timeout=0) == ["charged 500", "go", "wrapped", "shipped", "done"]
    assert _markers(h, passed.run_id) == []
    assert _markers(h, waiting.run_id) == ["gift-wrap"]
    # AND the marker precedes everything the new branch wrote
    types = [e.type for e in h.events(waiting.run_id)]
    wrap_created = next(
        i for i, e in enumerate(h.events(waiting.run_id)) if e.type is EventType.STEP_CREATED and i > 3
    )
    assert types.index(EventType.PATCH_APPLIED) < wrap_created
    # AND a new run on version 2 takes the new branch
    fresh = v2.start("checkout", "o-new")
    h.settle(fresh)
    _resume(h, "go:o-new", "go")
    h.settle(fresh)
    _resume(h, "done:o-new", "done")
    assert h.settle(fresh) is RunStatus.COMPLETED
    assert fresh.result(timeout=0) == ["charged 500", "go", "wrapped", "shipped", "done"]
    # AND no step ran twice, and a cold replay of every log on version 2 reaches its outcome
    assert sorted(ran) == sorted(set(ran))
    for run in (passed, waiting, fresh):
        check_replay(v2_app, h.world, run.run_id)


def test_without_patched_the_changed_code_fails_the_passed_run(harness: Harness) -> None:
    # GIVEN a run past the changed point on version 1
    h = harness
    ran: list[str] = []
    v1 = h.runtime_for(_app("v1", ran))
    passed = v1.start("checkout", "o-1")
    h.settle(passed)
    _resume(h, "go:o-1", "go")
    assert h.settle(passed) is RunStatus.RUNNING
    # WHEN version 2 inserts the step without patched() and the run continues
    h.runtime_for(_app("v2-unpatched", ran))
    _resume(h, "done:o-1", "done")
    # THEN the run fails with NON_DETERMINISM (what patched() prevents)
    assert h.settle(passed) is RunStatus.FAILED
    assert h.world.runs.get(passed.run_id).error_code == ERROR_CODE_NON_DETERMINISM


def test_a_deprecated_patch_replays_logs_with_the_marker_and_takes_the_new_branch(harness: Harness) -> None:
    # GIVEN a run that took the patched branch on version 2 and waits for "done"
    h = harness
    ran: list[str] = []
    v2 = h.runtime_for(_app("v2", ran))
    marked = v2.start("checkout", "o-1")
    h.settle(marked)
    _resume(h, "go:o-1", "go")
    assert h.settle(marked) is RunStatus.RUNNING
    assert _markers(h, marked.run_id) == ["gift-wrap"]
    # WHEN version 3 deprecates the patch, the run ends, and a new run starts on it
    v3_app = _app("v3", ran)
    v3 = h.runtime_for(v3_app)
    _resume(h, "done:o-1", "done")
    assert h.settle(marked) is RunStatus.COMPLETED
    fresh = v3.start("checkout", "o-2")
    h.settle(fresh)
    _resume(h, "go:o-2", "go")
    h.settle(fresh)
    _resume(h, "done:o-2", "done")
    assert h.settle(fresh) is RunStatus.COMPLETED
    # THEN both took the new branch; the new run recorded no marker; both replay cold on v3
    assert (
        marked.result(timeout=0)
        == fresh.result(timeout=0)
        == ["charged 500", "go", "wrapped", "shipped", "done"]
    )
    assert _markers(h, fresh.run_id) == []
    for run in (marked, fresh):
        check_replay(v3_app, h.world, run.run_id)


def test_a_cold_replay_of_an_old_log_on_the_deprecated_patch_diverges(harness: Harness) -> None:
    # GIVEN a run that completed on version 1 (no wrap)
    h = harness
    ran: list[str] = []
    v1 = h.runtime_for(_app("v1", ran))
    old = v1.start("checkout", "o-1")
    h.settle(old)
    _resume(h, "go:o-1", "go")
    h.settle(old)
    _resume(h, "done:o-1", "done")
    assert h.settle(old) is RunStatus.COMPLETED
    # THEN version 2 replays it (False: its log went past the point) and version 3 does not
    check_replay(_app("v2", ran), h.world, old.run_id)
    with pytest.raises(
        NonDeterminismError, match=r"log has step '[^']*ship' but the code calls step '[^']*wrap'"
    ):
        check_replay(_app("v3", ran), h.world, old.run_id)


def test_patched_takes_a_change_id_and_only_inside_a_workflow(memory_harness: Harness) -> None:
    with pytest.raises(RuntimeError, match="inside a workflow"):
        patched("x")
    with pytest.raises(RuntimeError, match="inside a workflow"):
        deprecated_patch("x")
    app = Workflows()

    @app.workflow
    async def bad() -> bool:
        return patched("two words")

    handle = memory_harness.runtime_for(app).start("bad")
    assert memory_harness.settle(handle) is RunStatus.FAILED
    with pytest.raises(Exception, match="printable and has no spaces"):
        handle.result(timeout=0)
    assert BadInput.__name__ in str(memory_harness.world.runs.get(handle.run_id).error)


def _sleeper(version: str, ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step
    def remind(user: str, channel: str) -> str:
        ran.append(f"{channel} {user}")
        return f"{channel}:{user}"

    @app.workflow
    async def nudge(user: str) -> str:
        await sleep("1h")
        if version == "v2" and patched("sms-reminders"):
            return await remind(user, "sms")
        return await remind(user, "mail")

    return app


def test_a_run_asleep_across_the_deploy_wakes_on_the_new_branch(memory_harness: Harness) -> None:
    # GIVEN a run asleep on version 1 (sleeps wake by delayed messages: the memory World's clock)
    h = memory_harness
    ran: list[str] = []
    asleep = h.runtime_for(_sleeper("v1", ran)).start("nudge", "ada")
    h.drain()
    assert h.status(asleep.run_id) is RunStatus.RUNNING
    # WHEN version 2 is deployed and the hour passes
    v2_app = _sleeper("v2", ran)
    h.runtime_for(v2_app)
    assert h.settle(asleep) is RunStatus.COMPLETED
    # THEN it woke on the new branch, recorded it, and replays cold on version 2
    assert asleep.result(timeout=0) == "sms:ada" and ran == ["sms ada"]
    assert _markers(h, asleep.run_id) == ["sms-reminders"]
    check_replay(v2_app, h.world, asleep.run_id)


def _three_steps(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step
    def add(x: int, y: int) -> int:
        ran.append(f"add {x} {y}")
        return x + y

    @app.workflow
    async def total(x: int) -> int:
        x = await add(x, 1)
        x = await add(x, 10 if patched("bigger-steps") else 2)
        return await add(x, 3)

    return app


def test_a_decision_on_the_inline_path_goes_in_the_outcomes_append_and_costs_no_write(
    harness: Harness,
) -> None:
    # GIVEN a new run whose workflow reaches patched() right after its first (inline) step
    h = harness
    ran: list[str] = []
    app = _three_steps(ran)
    run = h.runtime_for(app).start("total", 0)
    # WHEN it runs to its end
    assert h.settle(run) is RunStatus.COMPLETED
    # THEN it took the new branch, and the marker went in the one append that carried the first
    # step's outcome and the second step's create: no write of its own
    assert run.result(timeout=0) == 14 and ran == ["add 0 1", "add 1 10", "add 11 3"]
    appends = [c.detail for c in h.spy.calls("events.append_after") if c.run_id == run.run_id]
    carrying = [batch for batch in appends if any(r.type is EventType.PATCH_APPLIED for r in batch)]
    assert [[r.type for r in batch] for batch in carrying] == [
        [EventType.STEP_COMPLETED, EventType.PATCH_APPLIED, EventType.STEP_CREATED]
    ]
    creates = [c.detail for c in h.spy.calls("events.create") if c.run_id == run.run_id]
    assert EventType.PATCH_APPLIED not in [r.type for r in creates]
    check_replay(app, h.world, run.run_id)
