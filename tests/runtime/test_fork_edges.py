"""Forks: what may be forked, from where, and the same fork again (``client/forks.py``)."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.harness import Harness
from tests.runtime.test_fork import order_app
from world_aws import Workflows, create_hook
from world_aws.client.forks import FORK_POSITION, FORKED_FROM
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput, Conflict, NotFound


def waiting_app(bodies: Counter[str]) -> Workflows:
    app = Workflows()

    @app.step
    def note(n: int) -> int:
        bodies[f"note{n}"] += 1
        return n

    @app.workflow
    async def waiter(token: str) -> object:
        await note(1)
        value: object = await create_hook(token=token)
        await note(2)
        return value

    return app


def test_a_running_run_is_refused_and_a_cancelled_one_forks_where_it_stopped(memory_harness: Harness) -> None:
    # GIVEN a run waiting on a hook after its first step
    h = memory_harness
    bodies: Counter[str] = Counter()
    runtime = h.runtime_for(waiting_app(bodies))
    handle = runtime.start("waiter", "tok-w")
    h.settle()
    # WHEN it is forked while it runs THEN the fork is refused, naming the way out
    with pytest.raises(Conflict, match="is running: only an ended run can be forked"):
        runtime.fork(handle.run_id)
    # WHEN it is cancelled, then forked with no step named
    handle.cancel("wrong address")
    h.settle()
    fork = runtime.fork(handle.run_id)
    h.settle()
    # THEN the fork waits on the same hook, its first step reused, and takes the token
    assert h.status(fork.run_id) is RunStatus.RUNNING
    runtime.resume_hook("tok-w", "go")
    assert h.settle(fork) is RunStatus.COMPLETED
    assert fork.result(timeout=0) == "go"
    assert bodies == Counter(note1=1, note2=1)
    assert h.status(handle.run_id) is RunStatus.CANCELLED


def test_a_completed_run_forks_only_from_a_named_step(memory_harness: Harness) -> None:
    h = memory_harness
    bodies: Counter[str] = Counter()
    runtime = h.runtime_for(order_app(bodies, fixed=True))
    handle = runtime.start("order", "o-2")
    assert h.settle(handle) is RunStatus.COMPLETED
    with pytest.raises(BadInput, match="completed: name the step to fork it from"):
        runtime.fork(handle.run_id)
    fork = runtime.fork(handle.run_id, from_step="charge")
    assert h.settle(fork) is RunStatus.COMPLETED
    assert bodies == Counter(reserve=1, charge=2, ship=2)


def test_unknown_runs_and_steps_and_bad_names_are_clear_errors(memory_harness: Harness) -> None:
    h = memory_harness
    runtime = h.runtime_for(order_app(Counter(), fixed=False))
    handle = runtime.start("order", "o-3")
    assert h.settle(handle) is RunStatus.FAILED
    with pytest.raises(NotFound):
        runtime.fork("wrun_01NOTAREALRUN000000000000")
    with pytest.raises(NotFound, match="has no step 'refund'"):
        runtime.fork(handle.run_id, from_step="refund")
    with pytest.raises(NotFound, match=r"has no step 'charge#2' \(it calls it 1 time\)"):
        runtime.fork(handle.run_id, from_step="charge#2")
    for bad in ("charge#0", "charge#x", "#2", ""):
        with pytest.raises(BadInput, match="from_step"):
            runtime.fork(handle.run_id, from_step=bad)
    # AND a workflow the current code lacks is refused before anything is written
    with pytest.raises(BadInput, match="order"):
        h.runtime_for(Workflows()).fork(handle.run_id)


def test_the_same_key_is_the_same_fork_and_another_point_under_it_a_conflict(memory_harness: Harness) -> None:
    # GIVEN a failed run
    h = memory_harness
    bodies: Counter[str] = Counter()
    runtime = h.runtime_for(order_app(bodies, fixed=False))
    handle = runtime.start("order", "o-4")
    assert h.settle(handle) is RunStatus.FAILED
    fixed = h.runtime_for(order_app(bodies, fixed=True))
    # WHEN it is forked twice under one key (a retried request)
    first = fixed.fork(handle.run_id, idempotency_key="retry-me")
    again = fixed.fork(handle.run_id, idempotency_key="retry-me")
    # THEN both name one fork, which runs the failed step once
    assert first.run_id == again.run_id
    assert h.settle(first) is RunStatus.COMPLETED
    assert bodies["ship"] == 2
    assert fixed.fork(handle.run_id, idempotency_key="retry-me").run_id == first.run_id
    # AND the key asked for another point is a conflict; no key is a new fork each time
    with pytest.raises(Conflict, match="retry-me"):
        fixed.fork(handle.run_id, from_step="reserve", idempotency_key="retry-me")
    assert fixed.fork(handle.run_id).run_id != fixed.fork(handle.run_id).run_id
    run = h.world.runs.get(first.run_id)
    assert run.attributes[FORKED_FROM] == handle.run_id and int(run.attributes[FORK_POSITION]) > 0


def test_a_fork_of_a_fork_goes_on_from_the_forks_own_log(memory_harness: Harness) -> None:
    # GIVEN a fork that failed too (the first fix did not fix it)
    h = memory_harness
    bodies: Counter[str] = Counter()
    runtime = h.runtime_for(order_app(bodies, fixed=False))
    handle = runtime.start("order", "o-5")
    assert h.settle(handle) is RunStatus.FAILED
    fork = runtime.fork(handle.run_id)
    assert h.settle(fork) is RunStatus.FAILED
    # WHEN the fork is forked onto code that works
    second = h.runtime_for(order_app(bodies, fixed=True)).fork(fork.run_id)
    # THEN it completes, the first two steps still run once in all
    assert h.settle(second) is RunStatus.COMPLETED
    assert bodies == Counter(reserve=1, charge=1, ship=3)
    assert h.world.runs.get(second.run_id).attributes[FORKED_FROM] == fork.run_id
