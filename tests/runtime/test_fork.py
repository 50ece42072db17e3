"""Issue 40 item 5: forking an ended run onto the current code (``client/forks.py``), on every World."""

from __future__ import annotations

import asyncio
from collections import Counter

from harness.harness import Harness
from world_aws import FatalError, Workflows, create_hook, sleep
from world_aws.api.lineage_view import run_links
from world_aws.client.forks import FORKED_FROM
from world_aws.contract.records import EventType, RunStatus

BIG = 200 * 1024  # above the 128 KiB inline limit: the payload is held in S3 (contract §7.3)


def order_app(bodies: Counter[str], *, fixed: bool) -> Workflows:
    """Three steps in a row; the third fails for good unless ``fixed`` (the deploy that fixes it)."""
    app = Workflows()

    @app.step
    def reserve(order: str) -> str:
        bodies["reserve"] += 1
        return f"reserved:{order}"

    @app.step
    def charge(order: str) -> str:
        bodies["charge"] += 1
        return "x" * BIG  # a receipt too big for the log: its bytes live in blob storage

    @app.step(max_retries=0)
    def ship(order: str) -> str:
        bodies["ship"] += 1
        if not fixed:
            raise FatalError("the carrier API changed")
        return f"shipped:{order}"

    @app.workflow
    async def order(order: str) -> dict[str, object]:
        reserved = await reserve(order)
        receipt = await charge(order)
        shipped = await ship(order)
        return {"reserved": reserved, "receipt": len(receipt), "shipped": shipped}

    return app


def test_a_run_failed_in_its_third_step_is_forked_onto_fixed_code_without_rerunning_the_first_two(
    harness: Harness,
) -> None:
    # GIVEN a run that failed in its third step
    h = harness
    bodies: Counter[str] = Counter()
    broken = h.runtime_for(order_app(bodies, fixed=False))
    handle = broken.start("order", "o-1")
    assert h.settle(handle) is RunStatus.FAILED
    assert bodies == Counter(reserve=1, charge=1, ship=1)
    original_log = [(e.position, e.type) for e in h.events(handle.run_id)]
    # WHEN the code is fixed (a new deploy) and the run is forked
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    fork = fixed.fork(handle.run_id)
    # THEN the fork completes with the fixed step's result
    assert h.settle(fork) is RunStatus.COMPLETED
    assert fork.result(timeout=0) == {"reserved": "reserved:o-1", "receipt": BIG, "shipped": "shipped:o-1"}
    # AND the first two steps did not run again: only the fixed third did
    assert bodies == Counter(reserve=1, charge=1, ship=2)
    # AND the fork names its original, which stays as it ended, its log untouched
    run = h.world.runs.get(fork.run_id)
    assert run.attributes[FORKED_FROM] == handle.run_id
    assert run.input == h.world.runs.get(handle.run_id).input
    assert h.status(handle.run_id) is RunStatus.FAILED
    assert [(e.position, e.type) for e in h.events(handle.run_id)] == original_log
    # AND the fork's log starts with the copy (the two settled steps), then its start
    types = h.event_types(fork.run_id)
    started = types.index(EventType.RUN_STARTED)
    assert types[:started] == [
        EventType.RUN_CREATED,
        *[EventType.STEP_CREATED, EventType.STEP_STARTED, EventType.STEP_COMPLETED] * 2,
    ]
    # AND the big receipt, copied by reference, reads back whole in the fork
    charged = [e for e in h.events(fork.run_id) if e.type is EventType.STEP_COMPLETED][1]
    assert charged.data.output is not None and len(charged.data.output) > BIG


def loop_app(bodies: Counter[str], *, fixed: bool) -> Workflows:
    """A step called three times, a hook, a sleep and a child; the last call fails unless ``fixed``."""
    app = Workflows()

    @app.step
    def visit(i: int) -> int:
        bodies[f"visit#{i}"] += 1
        if i == 3 and not fixed:
            raise FatalError("bad third visit")
        return i * 10

    @app.workflow
    async def helper(n: int) -> int:
        return await visit(100 + n)

    @app.workflow
    async def tour(token: str) -> list[object]:
        first = await visit(1)
        approval = await create_hook(token=token)
        await sleep("1h")
        child = await helper(1)
        second, third = await asyncio.gather(visit(2), visit(3))
        return [first, approval, child, second, third]

    return app


def failed_tour(h: Harness, bodies: Counter[str], token: str) -> str:
    """A tour run that got its hook payload, slept, ran its child, then failed at visit(3)."""
    runtime = h.runtime_for(loop_app(bodies, fixed=False))
    handle = runtime.start("tour", token)
    h.settle()
    runtime.resume_hook(token, {"ok": True})
    assert h.settle(handle) is RunStatus.FAILED
    assert bodies == Counter({"visit#1": 1, "visit#101": 1, "visit#2": 1, "visit#3": 1})
    return handle.run_id


def test_a_fork_reuses_a_resumed_hook_an_elapsed_sleep_a_finished_child_and_a_settled_sibling(
    memory_harness: Harness,
) -> None:
    # GIVEN a run whose hook was resumed, whose hour of sleep elapsed, whose child finished,
    # and whose fan-out of two failed in one branch after the other completed
    h = memory_harness
    bodies: Counter[str] = Counter()
    original = failed_tour(h, bodies, "tok-tour")
    # WHEN it is forked onto fixed code
    fork = h.runtime_for(loop_app(bodies, fixed=True)).fork(original)
    # THEN it completes without waiting for the hook or the clock (settle would move it)
    before = h.clock.now()
    assert h.settle(fork) is RunStatus.COMPLETED
    assert h.clock.now() == before
    assert fork.result(timeout=0) == [10, {"ok": True}, 1010, 20, 30]
    # AND only the failed call ran again: not the first visit, the child's step, or the sibling
    assert bodies == Counter({"visit#1": 1, "visit#101": 1, "visit#2": 1, "visit#3": 2})
    # AND the fork started no child run of its own: the child's outcome was copied
    children = [e for e in h.events(fork.run_id) if e.type is EventType.HOOK_RECEIVED]
    assert len(children) == 2  # the hook's payload and the child's outcome, each once
    # AND the API's links name the original's child, whose result the fork reused
    serializer = h.runtime.app.serializer
    original_links = run_links(h.world.runs.get(original), h.events(original), serializer)
    fork_links = run_links(h.world.runs.get(fork.run_id), h.events(fork.run_id), serializer)
    assert original_links is not None and fork_links is not None
    assert fork_links.children == original_links.children and len(fork_links.children) == 1
    assert h.world.runs.get(fork_links.children[0]).status is RunStatus.COMPLETED


def test_from_step_names_a_call_and_name_n_its_nth_call(memory_harness: Harness) -> None:
    # GIVEN a run that failed at visit(3), its third call of ``visit`` (the child's is another)
    h = memory_harness
    bodies: Counter[str] = Counter()
    original = failed_tour(h, bodies, "tok-nth")
    runtime = h.runtime_for(loop_app(bodies, fixed=True))
    # WHEN it is forked from the 3rd call of visit, ...
    nth = runtime.fork(original, from_step="visit#3", idempotency_key="k-nth")
    assert h.settle(nth) is RunStatus.COMPLETED
    # THEN the calls before it are reused (the 2nd call of visit is the child's visit(101)), and
    # so is visit(2), gathered with it and completed after it was created
    assert bodies == Counter({"visit#1": 1, "visit#101": 1, "visit#2": 1, "visit#3": 2})
    # AND forked from "visit" (its first call), everything runs again but the run's input
    bodies.clear()
    first = runtime.fork(original, from_step="visit")
    h.settle()
    runtime.resume_hook("tok-nth", {"ok": True})
    assert h.settle(first) is RunStatus.COMPLETED
    assert bodies == Counter({"visit#1": 1, "visit#101": 1, "visit#2": 1, "visit#3": 1})


def test_a_run_failed_in_its_workflow_code_is_forked_with_its_whole_log(harness: Harness) -> None:
    # GIVEN a run whose workflow code raised after its two steps (no step failed)
    h = harness
    bodies: Counter[str] = Counter()

    def app_of(fixed: bool) -> Workflows:
        app = Workflows()

        @app.step(name="first")
        def first() -> int:
            bodies["first"] += 1
            return 1

        @app.step(name="second")
        def second() -> int:
            bodies["second"] += 1
            return 2

        @app.workflow(name="sums")
        async def sums() -> int:
            total = await first() + await second()
            if not fixed:
                raise ValueError("off by one")
            return total

        return app

    handle = h.runtime_for(app_of(False)).start("sums")
    assert h.settle(handle) is RunStatus.FAILED
    # WHEN it is forked onto the fixed workflow
    fork = h.runtime_for(app_of(True)).fork(handle.run_id)
    # THEN the fork replays the whole log on the new code: no step runs again
    assert h.settle(fork) is RunStatus.COMPLETED
    assert fork.result(timeout=0) == 3
    assert bodies == Counter(first=1, second=1)
