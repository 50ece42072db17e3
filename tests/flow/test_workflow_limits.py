"""Issue 41 items 1 and 3 for workflows: ``@app.workflow(concurrency=...)`` keeps runs pending, by priority.

On both Worlds (memory, DynamoDB/SQS on moto). A run holds its slot from its start to
its end: each run here waits on a hook (``hold:<name>``) that the test resumes, so the
test decides when a slot frees. Waiters are started by the release's wake, never by a
recheck copy (moto keeps SQS delays in wall-clock time).
"""

from __future__ import annotations

import pytest

from harness.harness import Harness
from world_aws import Concurrency, Workflows, create_hook
from world_aws.contract.records import EventRequest, EventType, RunCancelledData, RunStatus
from world_aws.errors import BadInput
from world_aws.testing.flow_checks import max_run_overlap, run_intervals


def held_app(limit: int = 1) -> Workflows:
    app = Workflows()

    @app.workflow(concurrency=Concurrency(limit, key=lambda customer, *_: customer), priority=1)
    async def order(customer: str, name: str) -> str:
        if name.startswith("boom"):
            raise ValueError(name)
        return str(await create_hook(token=f"hold:{name}"))

    return app


def started(harness: Harness, run_id: str) -> bool:
    return EventType.RUN_STARTED in harness.event_types(run_id)


def test_runs_beyond_the_limit_stay_pending_until_a_slot_frees(harness: Harness) -> None:
    runtime = harness.runtime_for(held_app(limit=2))
    # GIVEN three runs of customer c1 and one of c2, under 2 live runs per customer
    ids = {
        name: runtime.start("order", c, name).run_id
        for c, name in [("c1", "a"), ("c1", "b"), ("c1", "c"), ("c2", "d")]
    }
    harness.drain()
    # THEN the first two of c1 and the one of c2 run; the third of c1 stays pending
    assert [harness.status(ids[n]) for n in "abcd"] == [RunStatus.RUNNING] * 2 + [
        RunStatus.PENDING,
        RunStatus.RUNNING,
    ]
    assert not started(harness, ids["c"])
    state = harness.world.admission.slots("workflow:order:c1")
    assert {h.holder for h in state.holders} == {ids["a"], ids["b"]}
    assert [w.holder for w in state.waiters] == [ids["c"]]
    # WHEN the first run ends
    harness.clock.advance(1)
    runtime.resume_hook("hold:a", "done")
    harness.drain()
    # THEN the waiter starts at once (woken by the release), and every run completes
    assert harness.status(ids["a"]) is RunStatus.COMPLETED
    assert harness.status(ids["c"]) is RunStatus.RUNNING
    for name in "bcd":
        harness.clock.advance(1)
        runtime.resume_hook(f"hold:{name}", name)
        harness.drain()
    assert {harness.status(ids[n]) for n in "abcd"} == {RunStatus.COMPLETED}
    # AND measured from the runs' start and end, never more than 2 of c1 lived at once
    intervals = run_intervals(harness.world, [ids[n] for n in "abc"])
    assert max_run_overlap(intervals) == 2
    assert harness.world.admission.slots("workflow:order:c1").holders == ()


def test_waiters_start_by_priority_then_in_arrival_order(harness: Harness) -> None:
    runtime = harness.runtime_for(held_app(limit=1))
    # GIVEN one run holding c1's only slot, then runs in line: default (1), low (0), high (9), default
    first = runtime.start("order", "c1", "first").run_id
    harness.drain()
    order = [("d1", None), ("low", 0), ("high", 9), ("d2", None)]
    ids = {}
    for name, priority in order:
        ids[name] = runtime.start("order", "c1", name, priority=priority).run_id
        harness.drain()
    state = harness.world.admission.slots("workflow:order:c1")
    assert [w.holder for w in state.waiters] == [ids["high"], ids["d1"], ids["d2"], ids["low"]]
    assert [w.priority for w in state.waiters] == [9, 1, 1, 0]
    # WHEN each run in turn ends
    began = []
    runtime.resume_hook("hold:first", "x")
    harness.drain()
    for _ in order:
        [live] = [n for n in ids if harness.status(ids[n]) is RunStatus.RUNNING]
        began.append(live)
        runtime.resume_hook(f"hold:{live}", live)
        harness.drain()
    # THEN they started highest priority first, first come first served within one
    assert began == ["high", "d1", "d2", "low"]
    assert harness.status(first) is RunStatus.COMPLETED
    # AND the priority given to start() is recorded on the run
    assert harness.world.runs.get(ids["high"]).attributes["$priority"] == "9"


def test_a_cancelled_or_failed_run_gives_its_slot_back(harness: Harness) -> None:
    runtime = harness.runtime_for(held_app(limit=1))
    # GIVEN c1's slot held, and two runs in line
    holder = runtime.start("order", "c1", "a").run_id
    harness.drain()
    waiting = runtime.start("order", "c1", "b").run_id
    doomed = runtime.start("order", "c1", "boom").run_id
    harness.drain()
    # WHEN the holder is cancelled by a client
    assert runtime.get_run(holder).cancel("make room")
    harness.drain()
    # THEN the next in line runs
    assert harness.status(waiting) is RunStatus.RUNNING
    # WHEN a waiting run is cancelled, it leaves the line
    assert runtime.get_run(waiting).cancel("done")
    harness.drain()
    # THEN the failing run got the slot, failed, and gave it back
    assert harness.status(doomed) is RunStatus.FAILED
    state = harness.world.admission.slots("workflow:order:c1")
    assert state.holders == () and state.waiters == ()
    # AND a new run starts at once
    late = runtime.start("order", "c1", "late").run_id
    harness.drain()
    assert harness.status(late) is RunStatus.RUNNING


def test_a_run_in_line_that_is_cancelled_leaves_the_line(harness: Harness) -> None:
    runtime = harness.runtime_for(held_app(limit=1))
    holder = runtime.start("order", "c1", "a").run_id
    harness.drain()
    waiting = runtime.start("order", "c1", "b").run_id
    harness.drain()
    # WHEN the waiting run is cancelled
    assert runtime.get_run(waiting).cancel("no longer needed")
    # THEN it left the line, the holder holds on
    state = harness.world.admission.slots("workflow:order:c1")
    assert [h.holder for h in state.holders] == [holder] and state.waiters == ()
    assert harness.status(waiting) is RunStatus.CANCELLED


def test_a_slot_whose_release_was_lost_is_freed_by_the_next_arrivals_audit(harness: Harness) -> None:
    app = Workflows()

    @app.workflow(concurrency=Concurrency(1, lease=60))
    async def solo(name: str) -> str:
        return str(await create_hook(token=f"hold:{name}"))

    runtime = harness.runtime_for(app)
    first = runtime.start("solo", "a").run_id
    harness.drain()
    # GIVEN the holder ended without releasing (its release lost to a crash)
    harness.world.events.create(first, _cancel())
    assert harness.world.admission.slots("workflow:solo:*").holders != ()
    # WHEN a new run arrives before the lease passed: it waits
    second = runtime.start("solo", "b").run_id
    harness.drain()
    assert harness.status(second) is RunStatus.PENDING
    # AND after the lease, an arrival audits the holder, finds its run ended and frees the slot
    harness.clock.advance(61)
    third = runtime.start("solo", "c").run_id
    harness.drain()
    assert harness.status(second) is RunStatus.RUNNING
    assert harness.status(third) is RunStatus.PENDING


def test_a_live_holder_past_its_lease_keeps_its_slot(harness: Harness) -> None:
    app = Workflows()

    @app.workflow(concurrency=Concurrency(1, lease=60))
    async def solo(name: str) -> str:
        return str(await create_hook(token=f"hold:{name}"))

    runtime = harness.runtime_for(app)
    first = runtime.start("solo", "a").run_id
    harness.drain()
    # WHEN its lease passes with no delivery of it and another run arrives
    harness.clock.advance(120)
    second = runtime.start("solo", "b").run_id
    harness.drain()
    # THEN the holder, still live, was renewed; the newcomer waits
    assert harness.status(first) is RunStatus.RUNNING
    assert harness.status(second) is RunStatus.PENDING
    [held] = harness.world.admission.slots("workflow:solo:*").holders
    assert held.holder == first and held.expires_at > harness.clock.now()


def test_a_priority_that_is_not_an_int_is_refused_by_name(harness: Harness) -> None:
    runtime = harness.runtime_for(held_app())
    with pytest.raises(BadInput, match="priority"):
        runtime.start("order", "c1", "x", priority="high")  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="priority"):
        Workflows().workflow(priority=1.5)  # type: ignore[arg-type]


def _cancel() -> EventRequest:
    return EventRequest(EventType.RUN_CANCELLED, data=RunCancelledData(reason="lost release", actor="test"))
