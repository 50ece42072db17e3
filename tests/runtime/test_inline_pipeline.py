"""Inline rounds without a log read, and the pipelined outcome (issue 12; ARCHITECTURE §5).

A round that ran steps replays the events it wrote when they continue the cached
log; a single step's outcome is written with the next inline creates in one
``events.append_after``. On both Worlds: what the handler kept is what the World
lists, a foreign event or a lost answer makes it read, and an append that does not
land falls back to the one-by-one write without losing or repeating a step.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from harness.harness import Harness
from world_aws import RunHandle, Workflows, create_hook, get_step_metadata, sleep
from world_aws.contract import rules
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.world import QueueName
from world_aws.errors import Transient
from world_aws.worker.config import RuntimeConfig

from .inline_support import chain_app, fan_app, inject_at_outcome, requests_of
from .spy import Call

WARM = RuntimeConfig(replay_cache_runs=256)


def test_a_sequential_inline_run_replays_its_own_writes_without_reading_its_log_again(
    harness: Harness,
) -> None:
    # GIVEN a warm handler (suspended replays and logs kept) and a 6-step sequential run
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)
    # WHEN it settles
    handle = runtime.start("chain", 6)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 15
    # THEN its one workflow delivery read the log once, with the run (one read of both):
    # every later round replayed the events it had just written itself (their positions
    # followed the cached log's)
    (workflow,) = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert len(harness.spy.calls("events.list_with_run", delivery=workflow.index)) == 1
    assert harness.spy.calls("events.list", delivery=workflow.index) == []
    assert harness.spy.calls("runs.get", delivery=workflow.index) == []
    assert len(ran) == 6


def test_an_inline_outcome_whose_answer_was_lost_is_read_back_not_left_unseen(harness: Harness) -> None:
    # GIVEN a warm handler, and the third step's step_completed landing with its answer lost
    # (its in-process retry is then refused: the handler does not know the event it wrote)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)
    faults = inject_at_outcome(harness, 3, Transient("answer lost"), after=True)
    # WHEN a 5-step run settles
    handle = runtime.start("chain", 5)
    # THEN it completes in its first delivery: the round after the lost answer read the log
    # (replaying only what it knew it wrote would have left the run waiting on that step)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 10
    assert sum(f.fired for f in faults) == 1
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1
    assert len(ran) == 5


def test_the_log_a_handler_kept_from_its_own_writes_is_the_log_the_world_lists(harness: Harness) -> None:
    # GIVEN a warm handler and a run that runs 4 steps inline, then sleeps
    app = Workflows()

    @app.step(name="echo")
    def echo(i: int) -> bytes:
        return bytes([i]) * 2000

    @app.workflow
    async def then_sleep(n: int) -> int:
        for i in range(n):
            await echo(i)
        await sleep(60)
        return n

    runtime = harness.runtime_for(app, WARM)
    handle = runtime.start("then_sleep", 4)
    # WHEN its first delivery has run the steps and suspended on the sleep
    harness.drain()
    assert harness.status(handle.run_id) is RunStatus.RUNNING
    # THEN the log it kept (fed by its own writes after one read) is the World's, event for
    # event, up to its last step outcome (the sleep's wait_created came after: never fed)
    kept = runtime.logs.read(handle.run_id, fetch=False)
    assert [e.type for e in kept].count(EventType.STEP_COMPLETED) == 4
    assert kept[-1].type is EventType.STEP_COMPLETED
    assert kept == harness.events(handle.run_id)[: len(kept)]
    assert harness.settle(handle) is RunStatus.COMPLETED


def test_an_event_written_by_another_writer_during_an_inline_step_is_read_before_the_next_round(
    harness: Harness,
) -> None:
    # GIVEN a run that holds a hook and runs steps inline; the second step's body resumes
    # the hook, so a hook_received lands between that step's create and its outcome
    runtime_box: list[object] = []
    app = Workflows()

    @app.step(name="poke")
    def poke(i: int) -> int:
        if i == 1:
            runtime_box[0].resume_hook("inline-poke", "hello")  # type: ignore[attr-defined]
        return i

    @app.workflow
    async def hooked(n: int) -> list[object]:
        hook = create_hook(token="inline-poke")
        total = 0
        for i in range(n):
            total += await poke(i)
        value = await hook
        return [total, value]

    runtime = harness.runtime_for(app, WARM)
    runtime_box.append(runtime)
    # WHEN it settles
    handle = runtime.start("hooked", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the delivery running the steps saw the foreign event (it did not replay only its
    # own writes): it completed the run itself, before the hook's wake was delivered
    assert handle.result(timeout=0) == [3, "hello"]
    first = next(d for d in harness.deliveries if d.queue is QueueName.WORKFLOW)
    (completed,) = [
        c
        for c in harness.spy.calls(delivery=first.index)
        if EventType.RUN_COMPLETED in {r.type for r in requests_of(c)}
    ]
    assert completed.error is None


def test_each_outcome_is_appended_with_the_next_steps_create(harness: Harness) -> None:
    # GIVEN a warm handler and a 5-step sequential run
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)
    # WHEN it settles
    handle = runtime.start("chain", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 10
    # THEN every outcome but the last sits right before the next step's create in the log,
    # and the two were one append (the first create was appended with the run's start,
    # before any body ran);
    # the last outcome and run_completed were one append too
    events = harness.events(handle.run_id)
    after_outcome = [(a, b) for a, b in itertools.pairwise(events) if a.type is EventType.STEP_COMPLETED]
    assert [b.type for _, b in after_outcome] == [EventType.STEP_CREATED] * 4 + [EventType.RUN_COMPLETED]
    appends = [[r.type for r in c.detail] for c in harness.spy.calls("events.append_after")]
    pipelined = [[EventType.STEP_COMPLETED, EventType.STEP_CREATED]] * 4
    ended = [EventType.STEP_COMPLETED, EventType.RUN_COMPLETED]
    assert appends == [[EventType.RUN_STARTED, EventType.STEP_CREATED], *pipelined, ended]
    one_by_one = {c.detail.type for c in harness.spy.calls("events.create")}
    assert not one_by_one & {EventType.RUN_STARTED, EventType.STEP_COMPLETED, EventType.RUN_COMPLETED}
    assert len(ran) == 5


@pytest.mark.parametrize("flush_fails", [False, True], ids=["flushed", "flush-fails"])
def test_each_pipelined_append_is_flushed_beside_the_next_body(harness: Harness, flush_fails: bool) -> None:
    # GIVEN a warm handler and a 5-step sequential run (maybe every flush failing)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)
    if flush_fails:
        harness.spy.inject("events.flush", Transient("flush failed"), times=100)
    # WHEN it settles
    handle = runtime.start("chain", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN each append that claimed a body (the run's start with the first create, and
    # the four pipelined ones) was flushed once, and the one that claimed none (the
    # run's end) was not
    flushes = harness.spy.calls("events.flush")
    assert len(flushes) == 5 and {c.run_id for c in flushes} == {handle.run_id}
    # AND a failing flush fails nothing: the result is right and each body ran once
    assert handle.result(timeout=0) == 10
    assert len(ran) == 5


@pytest.mark.parametrize("run_event", [EventType.RUN_STARTED, EventType.RUN_COMPLETED], ids=["start", "end"])
@pytest.mark.parametrize("landed", [False, True], ids=["refused-before-landing", "landed-answer-lost"])
def test_a_runs_start_or_end_append_that_fails_records_it_once(
    harness: Harness, landed: bool, run_event: EventType
) -> None:
    # GIVEN the append that carries the run's start (with the first create) or its end (with
    # the last outcome) failing: before it landed, or after (its answer lost)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)

    def carries(call: Call) -> bool:
        return run_event in {r.type for r in requests_of(call)}

    fault = harness.spy.inject("events.append_after", Transient("timed out"), match=carries, after=landed)
    # WHEN a 3-step run settles
    handle = runtime.start("chain", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the fault fired, the run completed with its output in its first delivery, each body
    # ran once, and the log holds one start before every step event, one outcome per step,
    # and one run_completed, last
    assert fault.fired == 1
    assert handle.result(timeout=0) == 3
    assert ran == ["add 0+0", "add 0+1", "add 1+2"]
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1
    types = harness.event_types(handle.run_id)
    assert types[:3] == [EventType.RUN_CREATED, EventType.RUN_STARTED, EventType.STEP_CREATED]
    assert types.count(EventType.RUN_STARTED) == 1 and types.count(EventType.STEP_COMPLETED) == 3
    assert types.count(EventType.RUN_COMPLETED) == 1 and types[-1] is EventType.RUN_COMPLETED


def test_a_pending_run_whose_first_pass_is_not_only_creates_starts_first(harness: Harness) -> None:
    # GIVEN a workflow that sleeps before its step
    app = Workflows()

    @app.step(name="one")
    def one() -> int:
        return 1

    @app.workflow
    async def later() -> int:
        await sleep(1)
        return await one()

    runtime = harness.runtime_for(app, WARM)
    # WHEN it settles
    handle = runtime.start("later")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN run_started was written on its own, before the wait
    types = harness.event_types(handle.run_id)
    assert types[:3] == [EventType.RUN_CREATED, EventType.RUN_STARTED, EventType.WAIT_CREATED]
    assert handle.result(timeout=0) == 1


def test_a_workflow_failing_after_its_last_outcome_appends_run_failed_with_it(harness: Harness) -> None:
    # GIVEN a workflow that raises once its one inline step returned
    app = Workflows()

    @app.step(name="one")
    def one() -> int:
        return 1

    @app.workflow
    async def fails() -> None:
        await one()
        raise ValueError("after the step")

    runtime = harness.runtime_for(app, WARM)
    # WHEN it settles
    handle = runtime.start("fails")
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN the step's outcome and run_failed were one append, and the run's error names the cause
    appends = [[r.type for r in c.detail] for c in harness.spy.calls("events.append_after")]
    assert appends[-1] == [EventType.STEP_COMPLETED, EventType.RUN_FAILED]
    assert harness.event_types(handle.run_id)[-2:] == [EventType.STEP_COMPLETED, EventType.RUN_FAILED]
    with pytest.raises(Exception, match="after the step"):
        handle.result(timeout=0)


@pytest.mark.parametrize("landed", [False, True], ids=["refused-before-landing", "landed-answer-lost"])
def test_an_append_that_fails_falls_back_without_losing_or_repeating_a_step(
    harness: Harness, landed: bool
) -> None:
    # GIVEN the second pipelined append failing: before it landed, or after (its answer lost)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), WARM)
    seen = {"appends": 0}

    def second_append(call: Call) -> bool:
        seen["appends"] += 1
        return seen["appends"] == 2

    fault = harness.spy.inject(
        "events.append_after", Transient("timed out"), match=second_append, after=landed
    )
    # WHEN a 5-step run settles
    handle = runtime.start("chain", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the fault fired, the run completed in its first delivery, and each body ran once
    assert fault.fired == 1
    assert handle.result(timeout=0) == 10
    assert ran == ["add 0+0", "add 0+1", "add 1+2", "add 3+3", "add 6+4"]
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1
    # AND the log holds each step once: created, completed
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_CREATED) == types.count(EventType.STEP_COMPLETED) == 5


def test_a_pass_with_more_than_inline_creates_writes_the_outcome_alone(harness: Harness) -> None:
    # GIVEN a workflow whose second step is followed by a sleep
    app = Workflows()
    ran: list[int] = []

    @app.step(name="note")
    def note(i: int) -> int:
        ran.append(i)
        return i

    @app.workflow
    async def nap(n: int) -> int:
        await note(1)
        await note(2)
        await sleep(30)
        return n

    runtime = harness.runtime_for(app, WARM)
    # WHEN it settles
    handle = runtime.start("nap", 7)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the second outcome went alone and the sleep's wait came after it, by the normal pass
    types = harness.event_types(handle.run_id)
    second = [i for i, t in enumerate(types) if t is EventType.STEP_COMPLETED][1]
    assert types[second + 1] is EventType.WAIT_CREATED
    assert ran == [1, 2] and handle.result(timeout=0) == 7


def test_a_wave_wider_than_one_batch_is_created_by_the_normal_pass(harness: Harness) -> None:
    # GIVEN up to 12 inline steps, and a step followed by a 12-way gather: its outcome and
    # 12 creates would not fit one append (rules.MAX_BATCH_EVENTS)
    app = Workflows()

    @app.step(name="one")
    def one(i: int) -> int:
        return i

    @app.workflow
    async def wide(n: int) -> int:
        first = await one(0)
        rest = await asyncio.gather(*(one(i) for i in range(1, n + 1)))
        return first + sum(rest)

    runtime = harness.runtime_for(app, RuntimeConfig(replay_cache_runs=256, max_inline_steps=12))
    # WHEN it settles
    handle = runtime.start("wide", 12)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN it completed in its first delivery: the first outcome went alone, the wave inline
    assert handle.result(timeout=0) == 78
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1
    assert all(len(c.detail) <= rules.MAX_BATCH_EVENTS for c in harness.spy.calls("events.append_after"))


def _wide(max_inline: int) -> RuntimeConfig:
    """A fixed inline width: a wave's steps past it are dispatched at once (no fast rounds)."""
    return RuntimeConfig(replay_cache_runs=256, max_inline_steps=max_inline, inline_fast_seconds=0)


def assert_fan_settled_once(harness: Harness, handle: RunHandle, ran: list[str], n: int) -> None:
    """The ``fan`` run completed in its first delivery, each body ran once, each step logged once."""
    assert handle.result(timeout=0) == [i * i for i in range(n)]
    assert sorted(ran) == sorted(f"square {i}" for i in range(n))
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_CREATED) == types.count(EventType.STEP_COMPLETED) == n


def _creates_in(call: Call) -> list[EventType]:
    return [r.type for r in call.detail if r.type is EventType.STEP_CREATED]


def test_a_wide_inline_wave_is_created_by_appends_of_one_batch_each(harness: Harness) -> None:
    # GIVEN up to 25 inline steps and a 25-way gather
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(25))
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the wave's creates went in appends of at most one batch each (the first with the
    # run's start), none one by one, and every body ran once, in the first delivery
    assert handle.result(timeout=0) == [i * i for i in range(25)]
    created = [len(_creates_in(c)) for c in harness.spy.calls("events.append_after") if _creates_in(c)]
    assert created == [9, 10, 6]
    assert not [c for c in harness.spy.calls("events.create") if c.detail.type is EventType.STEP_CREATED]
    assert sorted(ran) == sorted(f"square {i}" for i in range(25))
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1


@pytest.mark.parametrize("landed", [False, True], ids=["refused-before-landing", "landed-answer-lost"])
def test_a_wave_append_that_fails_falls_back_without_losing_or_repeating_a_step(
    harness: Harness, landed: bool
) -> None:
    # GIVEN a 25-way inline wave whose second create batch fails: before it landed, or after
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(25))
    seen = {"batches": 0}

    def second_batch(call: Call) -> bool:
        if not _creates_in(call):
            return False
        seen["batches"] += 1
        return seen["batches"] == 2

    fault = harness.spy.inject(
        "events.append_after", Transient("timed out"), match=second_batch, after=landed
    )
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the fault fired, the run completed in its first delivery, and each body ran once
    assert fault.fired == 1
    assert_fan_settled_once(harness, handle, ran, 25)


def _outcomes_in(call: Call) -> list[EventType]:
    return [r.type for r in call.detail if r.type is EventType.STEP_COMPLETED]


def test_a_wide_inline_waves_outcomes_are_appended_a_batch_at_a_time(harness: Harness) -> None:
    # GIVEN up to 25 inline steps and a 25-way gather
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(25))
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the outcomes went in appends of at most one batch each (full ones, or what a
    # batch had gathered when it stopped waiting: outcomes.LINGER_SECONDS), none one by one
    settled = [len(_outcomes_in(c)) for c in harness.spy.calls("events.append_after") if _outcomes_in(c)]
    assert sum(settled) == 25 and max(settled) == rules.MAX_BATCH_EVENTS
    assert not [c for c in harness.spy.calls("events.create") if c.detail.type is EventType.STEP_COMPLETED]
    assert handle.result(timeout=0) == [i * i for i in range(25)]
    assert len([d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]) == 1


@pytest.mark.parametrize("landed", [False, True], ids=["refused-before-landing", "landed-answer-lost"])
def test_an_outcome_batch_that_fails_is_written_one_by_one_without_repeating_a_step(
    harness: Harness, landed: bool
) -> None:
    # GIVEN a 25-way inline wave whose first batch of outcomes fails: before it landed, or after
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(25))

    def first_outcomes(call: Call) -> bool:
        return bool(_outcomes_in(call))

    fault = harness.spy.inject(
        "events.append_after", Transient("timed out"), match=first_outcomes, after=landed, times=1
    )
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the fault fired once, the rest were written one by one, and each body ran once
    assert fault.fired == 1
    assert_fan_settled_once(harness, handle, ran, 25)


@pytest.mark.parametrize("landed", [False, True], ids=["refused-before-landing", "landed-answer-lost"])
def test_a_claim_failing_transiently_is_taken_up_again_without_failing_the_delivery(
    harness: Harness, landed: bool
) -> None:
    # GIVEN a 6-way inline wave whose creates go one by one (its batch append is refused)
    # and whose third create fails with Transient: before it landed, or after
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(6))
    harness.spy.inject("events.append_after", Transient("refused"), match=lambda c: bool(_creates_in(c)))
    seen = {"creates": 0}

    def third_create(call: Call) -> bool:
        if call.detail.type is not EventType.STEP_CREATED:
            return False
        seen["creates"] += 1
        return seen["creates"] == 3

    fault = harness.spy.inject("events.create", Transient("timed out"), match=third_create, after=landed)
    # WHEN it settles
    handle = runtime.start("fan", 6)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the other claims ran in that round and the failed one in the next, all in the
    # first delivery (one error did not throw the wave's claims away), each body once
    assert fault.fired == 1
    assert_fan_settled_once(harness, handle, ran, 6)


def test_a_finished_bodys_outcome_is_in_the_log_while_a_slow_sibling_still_runs(harness: Harness) -> None:
    # GIVEN a 3-way inline wave whose third body waits (up to 10 s) until the log holds
    # the other two outcomes
    app = Workflows()
    world = harness.world
    saw: list[bool] = []

    @app.step(name="part")
    def part(i: int) -> int:
        if i == 2:
            run_id = get_step_metadata().run_id
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                done = [e for e in world.events.list(run_id) if e.type is EventType.STEP_COMPLETED]
                if len(done) == 2:
                    break
                time.sleep(0.01)
            saw.append(len(done) == 2)
        return i

    @app.workflow
    async def parts() -> list[int]:
        return list(await asyncio.gather(*(part(i) for i in range(3))))

    runtime = harness.runtime_for(app, _wide(3))
    # WHEN it settles
    handle = runtime.start("parts")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the slow body saw its siblings' outcomes recorded before it finished (a batch
    # stops waiting for more after outcomes.LINGER_SECONDS), and the run completed
    assert saw == [True]
    assert handle.result(timeout=0) == [0, 1, 2]


def test_a_wave_whose_delivery_fails_keeps_the_outcomes_its_bodies_reached(harness: Harness) -> None:
    # GIVEN a 4-way inline wave in which step 3 fails its first attempt and the message
    # of its retry cannot be published (so the delivery fails and is redelivered)
    app = Workflows()
    ran: list[int] = []

    @app.step(name="part")
    def part(i: int) -> int:
        ran.append(i)
        if i == 3 and ran.count(3) == 1:
            raise ValueError("first attempt fails")
        return i

    @app.workflow
    async def parts() -> list[int]:
        return list(await asyncio.gather(*(part(i) for i in range(4))))

    runtime = harness.runtime_for(app, _wide(4))
    fault = harness.spy.inject(
        "queue.publish", Transient("SQS unreachable"), match=lambda c: c.detail.queue is QueueName.STEP
    )
    # WHEN it settles
    handle = runtime.start("parts")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the three steps that finished in the failed delivery had their outcomes written
    # before the failure went on: no later delivery ran their bodies again
    assert fault.fired == 1
    assert handle.result(timeout=0) == [0, 1, 2, 3]
    assert sorted(ran) == [0, 1, 2, 3, 3]
    # AND the failed delivery, having moved the run on (outcomes its wave's batches wrote,
    # never fed to its log cache), handed it on to a fresh message instead of counting a
    # redelivery against the cap
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert len(workflow) >= 2 and all(d.attempt == 1 for d in workflow)


def _dispatched_creates_in(call: Call) -> int:
    return sum(1 for r in requests_of(call) if r.type is EventType.STEP_CREATED and r.data.owner is None)


@pytest.mark.parametrize("fault", [None, "refused-before-landing", "landed-answer-lost"])
def test_a_fan_outs_dispatched_creates_are_appended_before_the_inline_ones(
    harness: Harness, fault: str | None
) -> None:
    # GIVEN 3 inline steps and a 25-way gather: 22 branches dispatched; maybe the second
    # append of dispatched creates failing, before it landed or after (its answer lost)
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), _wide(3))
    seen = {"appends": 0}

    def second_dispatched_append(call: Call) -> bool:
        if call.op != "events.append_after" or not _dispatched_creates_in(call):
            return False
        seen["appends"] += 1
        return seen["appends"] == 2

    if fault is not None:
        harness.spy.inject(
            "events.append_after",
            Transient("timed out"),
            match=second_dispatched_append,
            after=fault == "landed-answer-lost",
        )
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN every body ran once and the log holds one create of each step
    assert handle.result(timeout=0) == [i * i for i in range(25)]
    assert sorted(ran) == sorted(f"square {i}" for i in range(25))
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_CREATED) == 25 and types.count(EventType.STEP_COMPLETED) == 25
    appended = [
        _dispatched_creates_in(c)
        for c in harness.spy.calls("events.append_after")
        if c.error is None and _dispatched_creates_in(c)
    ]
    one_by_one = [c for c in harness.spy.calls("events.create") if c.detail.type is EventType.STEP_CREATED]
    if fault is None:
        # ... created in appends of a batch each (22 = 10 + 10 + 2), the 3 inline ones after
        # them in one more, none one by one, and each message published after its create
        assert appended == [10, 10, 2]
        assert not one_by_one
        owned = [
            sum(1 for r in requests_of(c) if r.type is EventType.STEP_CREATED and r.data.owner is not None)
            for c in harness.spy.calls("events.append_after")
        ]
        assert [n for n in owned if n] == [3]
        first_publish = min(
            c.start for c in harness.spy.calls("queue.publish") if c.detail.queue is QueueName.STEP
        )
        assert all(c.end < first_publish for c in harness.spy.calls("events.append_after")[:3])
    else:
        # ... the first append landed, the rest went one by one (the landed-but-lost
        # append's creates refused as duplicates there)
        assert appended[0] == 10
        assert len([c for c in one_by_one if c.detail.data.owner is None]) == 12
