"""Inline step execution (issue 12): the continuing invocation runs ready steps itself.

On both Worlds: a sequential run completes in its first workflow delivery with no
step message; a fan-out runs ``max_inline_steps`` branches inline and dispatches
the rest; the kill switch dispatches every step. Ownership: a crash inside an
inline step is taken over by the owner's own redelivery (a new attempt), never by
a wake of another message while the owner may still run it; a retry goes by a
delayed step message.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import timedelta

import pytest

from harness.harness import Harness
from harness.harness import memory_harness as fresh_memory_harness
from world_aws import Workflows, get_step_metadata
from world_aws.contract.records import (
    EventRequest,
    EventResult,
    EventType,
    RunStatus,
    StepStartedData,
    StepStatus,
    owner_of,
)
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.engine.replay import OwnedStep, StepRequest, Suspended
from world_aws.errors import BadInput, Transient, WorkflowFailedError
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.inline import InlinePlan, InlineSteps, Owner

from .failures import Crash, survive_crashes
from .inline_support import AroundWorld, Write, chain_app, fan_app, inject_at_outcome, requests_of
from .spy import Call, Fault


def test_sequential_run_completes_in_its_first_workflow_delivery_without_step_messages(
    harness: Harness,
) -> None:
    # GIVEN inline execution on (the default)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    # WHEN a 4-step sequential run settles
    handle = runtime.start("chain", 4)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN it completed with the right result, in one workflow delivery and no step message
    assert handle.result(timeout=0) == 6
    assert harness.step_deliveries() == []
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert len(workflow) == 1
    # AND each step was created owned by that delivery (started in its create), then completed
    events = harness.events(handle.run_id)
    created = [e for e in events if e.type is EventType.STEP_CREATED]
    owners = {str(owner_of(e.data)).rsplit("#", 1)[0] for e in created}
    assert owners == {f"{workflow[0].message_id}#1"}
    assert EventType.STEP_STARTED not in [e.type for e in events]
    steps = [harness.world.steps.get(handle.run_id, str(e.correlation_id)) for e in created]
    assert [(s.status, s.attempt) for s in steps] == [(StepStatus.COMPLETED, 1)] * 4
    assert ran == ["add 0+0", "add 0+1", "add 1+2", "add 3+3"]


def test_fan_out_runs_max_inline_steps_branches_inline_and_dispatches_the_rest(harness: Harness) -> None:
    # GIVEN at most 3 inline steps, no fast rounds, and a 5-way gather
    ran: list[str] = []
    runtime = harness.runtime_for(fan_app(ran), RuntimeConfig(max_inline_steps=3, inline_fast_seconds=0))
    # WHEN it settles
    handle = runtime.start("fan", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the results are in call order; 3 branches ran inline, 2 by step message
    assert handle.result(timeout=0) == [0, 1, 4, 9, 16]
    assert sorted(ran) == sorted(f"square {i}" for i in range(5))
    created = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert len(created) == 5
    assert len([e for e in created if owner_of(e.data) is not None]) == 3
    assert len({d.step_id for d in harness.step_deliveries()}) == 2


def test_a_dispatched_branch_whose_create_failed_is_never_run_inline_beside_its_message(
    harness: Harness,
) -> None:
    # GIVEN 3 inline steps, no fast rounds, and a 5-way gather whose 4th branch is dispatched:
    # the append of the dispatched creates fails, then the 4th's own create fails transiently
    # (tolerated: its message went, and its consumer creates it from the message)
    ran: list[str] = []
    lock = threading.Lock()
    running: dict[int, int] = {}
    bodies: list[tuple[int, int]] = []  # (branch, bodies of that branch running as it began)
    consumer: list[Runtime] = []

    def gate(x: int) -> None:
        with lock:
            bodies.append((x, running.get(x, 0)))
            running[x] = running.get(x, 0) + 1
        if x == 3 and bodies.count((3, 0)) == 1:
            harness.drain(consumer[0], queues=[QueueName.STEP])  # step messages meanwhile
        with lock:
            running[x] -= 1

    app = fan_app(ran, gate)
    config = RuntimeConfig(max_inline_steps=3, inline_fast_seconds=0)
    consumer.append(harness.runtime_for(app, config))
    runtime = harness.runtime_for(app, config)

    def dispatched_creates(call: Call) -> bool:
        requests = requests_of(call)
        return any(r.type is EventType.STEP_CREATED and owner_of(r.data) is None for r in requests)

    def fourth_create(call: Call) -> bool:
        return dispatched_creates(call) and str(requests_of(call)[0].correlation_id).endswith("_4")

    harness.spy.inject("events.append_after", Transient("throttled"), match=dispatched_creates)
    harness.spy.inject("events.create", Transient("throttled"), match=fourth_create)
    # WHEN it settles
    handle = runtime.start("fan", 5)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the 4th branch's body ran once: the continuation, finding it still new after its
    # inline round, dispatched it again instead of creating it as its own and running it
    # while the step message's consumer started it too
    assert handle.result(timeout=0) == [0, 1, 4, 9, 16]
    assert sorted(bodies) == [(i, 0) for i in range(5)]
    created = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_CREATED]
    assert [owner_of(e.data) is None for e in created if e.correlation_id.endswith("_4")] == [True]


def test_a_branch_dispatched_by_one_continuation_is_never_run_inline_by_another_beside_its_message(
    harness: Harness,
) -> None:
    # GIVEN 1 inline step, no fast rounds, and a 2-way gather: the first continuation runs
    # branch 0 inline and dispatches branch 1, whose create fails transiently after its
    # append did (tolerated: its message went); while branch 0 runs, a wake-up of the run is
    # handled by another runtime, which finds branch 1 new and runs it inline
    ran: list[str] = []
    lock = threading.Lock()
    running: dict[int, int] = {}
    bodies: list[tuple[int, int]] = []  # (branch, bodies of that branch running as it began)
    others: list[Runtime] = []
    run_ids: list[str] = []

    def gate(x: int) -> None:
        with lock:
            bodies.append((x, running.get(x, 0)))
            running[x] = running.get(x, 0) + 1
        if x == 0 and bodies.count((0, 0)) == 1:  # a wake, handled meanwhile
            others[0].orchestrator.wake(run_ids[0], delay_seconds=0, key="hook-resume")
            harness.drain(others[0], queues=[QueueName.WORKFLOW])
        if x == 1 and bodies.count((1, 0)) == 1:  # step messages, meanwhile
            harness.drain(others[1], queues=[QueueName.STEP])
        with lock:
            running[x] -= 1

    app = fan_app(ran, gate)
    config = RuntimeConfig(max_inline_steps=1, inline_fast_seconds=0)
    others += [harness.runtime_for(app, config), harness.runtime_for(app, config)]
    runtime = harness.runtime_for(app, config)

    def dispatched_creates(call: Call) -> bool:
        requests = requests_of(call)
        return any(r.type is EventType.STEP_CREATED and owner_of(r.data) is None for r in requests)

    harness.spy.inject("events.append_after", Transient("throttled"), match=dispatched_creates)
    harness.spy.inject("events.create", Transient("throttled"), match=dispatched_creates)
    # WHEN it settles
    handle = runtime.start("fan", 2)
    run_ids.append(handle.run_id)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == [0, 1]
    # THEN branch 1's body ran once: the wake's continuation, finding branch 0 run inline by a
    # live owner, dispatched branch 1 under its key instead of creating it as its own and
    # running it beside the first message's consumer
    assert sorted(bodies) == [(0, 0), (1, 0)]


def test_a_fan_out_of_fast_steps_runs_inline_in_rounds_twice_as_wide_each_time(harness: Harness) -> None:
    # GIVEN 3 inline steps with fast rounds on (the default), and a 25-way gather of instant steps
    ran: list[str] = []
    config = RuntimeConfig(max_inline_steps=3)
    assert config.inline_fast_seconds > 0
    runtime = harness.runtime_for(fan_app(ran), config)
    # WHEN it settles
    handle = runtime.start("fan", 25)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN every branch ran inline, once, and no step went by message
    assert handle.result(timeout=0) == [i * i for i in range(25)]
    assert sorted(ran) == sorted(f"square {i}" for i in range(25))
    assert harness.step_deliveries() == []
    events = harness.events(handle.run_id)
    created = [e for e in events if e.type is EventType.STEP_CREATED]
    assert len(created) == 25 and all(owner_of(e.data) is not None for e in created)
    # AND the rounds were 3, 6, 12 and the 4 left: each round's creates come after the
    # previous round's outcomes
    rounds: list[int] = []
    for previous, event in zip([None, *events], events, strict=False):
        if event.type is EventType.STEP_CREATED:
            if previous is None or previous.type is not EventType.STEP_CREATED:
                rounds.append(0)
            rounds[-1] += 1
    assert rounds == [3, 6, 12, 4]


def test_a_slow_round_dispatches_the_steps_it_held_and_the_run_completes(harness: Harness) -> None:
    # GIVEN fast rounds of 50 ms and a 6-way gather whose first 3 (inline) bodies block
    # until the 3 held branches went out by message
    ran: list[str] = []
    dispatched = threading.Event()
    app = _slow_first_round(ran, dispatched)

    _watch_step_messages(harness, dispatched)
    runtime = harness.runtime_for(app, _fast_rounds_of(0.05))
    # WHEN it settles
    handle = runtime.start("fan", 6)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the 3 inline branches ran here, the 3 held ones by step message, each once
    assert handle.result(timeout=0) == [i * i for i in range(6)]
    assert sorted(ran) == sorted(f"square {i}" for i in range(6))
    assert sorted({d.step_id for d in harness.step_deliveries()}) == sorted(
        e.correlation_id
        for e in harness.events(handle.run_id)
        if e.type is EventType.STEP_CREATED and owner_of(e.data) is None
    )
    assert len({d.step_id for d in harness.step_deliveries()}) == 3


def _slow_first_round(ran: list[str], dispatched: threading.Event) -> Workflows:
    """A 6-way gather whose first 3 (inline) bodies block until ``dispatched`` is set."""

    def gate(x: int) -> None:
        if x < 3:
            assert dispatched.wait(30), "the held branches were never dispatched"

    return fan_app(ran, gate)


def _fast_rounds_of(seconds: float) -> RuntimeConfig:
    return RuntimeConfig(max_inline_steps=3, inline_fast_seconds=seconds)


def _watch_step_messages(
    harness: Harness,
    dispatched: threading.Event,
    error: BaseException | None = None,
    *,
    fail_at: int = 0,
) -> Fault:
    """Set ``dispatched`` at the first step message; make the ``fail_at``-th one raise ``error`` (0: none)."""
    seen = {"step": 0}

    def step_message(call: Call) -> bool:
        if call.op != "queue.publish" or call.detail.queue is not QueueName.STEP:
            return False
        seen["step"] += 1
        dispatched.set()
        return seen["step"] == fail_at

    injected = error if error is not None else Transient("never raised")
    return harness.spy.inject("queue.publish", injected, match=step_message)  # type: ignore[arg-type]


def _assert_each_step_once_in_the_log(harness: Harness, run_id: str, n: int) -> None:
    events = harness.events(run_id)
    created = [e.correlation_id for e in events if e.type is EventType.STEP_CREATED]
    completed = [e.correlation_id for e in events if e.type is EventType.STEP_COMPLETED]
    assert len(created) == len(set(created)) == n
    assert sorted(completed) == sorted(created)


def test_a_slow_round_dispatches_what_it_held_even_when_its_bodies_fill_the_pool(harness: Harness) -> None:
    # GIVEN a runtime pool of 2 threads: the first round's 3 blocked bodies and the
    # watcher take them all (the first body runs on the delivery's own thread)
    ran: list[str] = []
    dispatched = threading.Event()

    _watch_step_messages(harness, dispatched)
    config = RuntimeConfig(max_inline_steps=3, inline_fast_seconds=0.05, dispatch_parallelism=2)
    runtime = harness.runtime_for(_slow_first_round(ran, dispatched), config)
    # WHEN it settles
    handle = runtime.start("fan", 6)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the held steps went out while the bodies waited (on a pool of the watcher's
    # own), and every step ran once
    assert handle.result(timeout=0) == [i * i for i in range(6)]
    assert sorted(ran) == sorted(f"square {i}" for i in range(6))
    assert len({d.step_id for d in harness.step_deliveries()}) == 3


def test_a_slow_rounds_dispatch_that_dies_midway_leaves_a_run_that_completes(harness: Harness) -> None:
    # GIVEN a slow first round whose watcher dies at the second held step's message
    ran: list[str] = []
    dispatched = threading.Event()
    fault = _watch_step_messages(harness, dispatched, Crash(), fail_at=2)
    runtime = harness.runtime_for(_slow_first_round(ran, dispatched), _fast_rounds_of(0.05))
    # WHEN it settles (the dead delivery's message comes back)
    handle = runtime.start("fan", 6)
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    # THEN the invocation died there, and the run completed with each step created and settled once
    assert fault.fired == 1
    assert handle.result(timeout=0) == [i * i for i in range(6)]
    _assert_each_step_once_in_the_log(harness, handle.run_id, 6)
    assert {f"square {i}" for i in range(6)} <= set(ran)  # at least once


def test_a_slow_rounds_dispatch_that_fails_is_sent_again_by_the_next_pass(harness: Harness) -> None:
    # GIVEN a slow first round whose first held step message fails to publish
    ran: list[str] = []
    dispatched = threading.Event()

    fault = _watch_step_messages(harness, dispatched, Transient("send failed"), fail_at=1)
    runtime = harness.runtime_for(_slow_first_round(ran, dispatched), _fast_rounds_of(0.05))
    # WHEN it settles
    handle = runtime.start("fan", 6)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the run completed, each step created and settled once and each body run once:
    # the step created without its message was published by a later pass
    assert fault.fired == 1
    assert handle.result(timeout=0) == [i * i for i in range(6)]
    _assert_each_step_once_in_the_log(harness, handle.run_id, 6)
    assert sorted(ran) == sorted(f"square {i}" for i in range(6))


def test_kill_switch_dispatches_every_step_by_message(harness: Harness) -> None:
    # GIVEN WORKFLOW_MAX_INLINE_STEPS=0
    ran: list[str] = []
    config = RuntimeConfig.from_env({"WORKFLOW_MAX_INLINE_STEPS": "0"})
    assert config.max_inline_steps == 0
    runtime = harness.runtime_for(chain_app(ran), config)
    # WHEN a 3-step run settles
    handle = runtime.start("chain", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN every step went by message and none is owned
    assert handle.result(timeout=0) == 3
    assert len(harness.step_deliveries()) == 3
    events = harness.events(handle.run_id)
    assert all(owner_of(e.data) is None for e in events)
    assert [e.type for e in events].count(EventType.STEP_STARTED) == 3


def test_crash_inside_an_inline_step_is_taken_over_by_the_owners_redelivery(harness: Harness) -> None:
    # GIVEN the invocation running the second inline step dies writing its outcome
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    faults = inject_at_outcome(harness, 2, Crash())  # type: ignore[arg-type]
    # WHEN the queues settle (the workflow message comes back after its visibility timeout)
    handle = runtime.start("chain", 3)
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    # THEN the run completed; the step's body ran again, as a new attempt of the same owner's message
    assert handle.result(timeout=0) == 3
    assert sum(f.fired for f in faults) == 1
    assert ran == ["add 0+0", "add 0+1", "add 0+1", "add 1+2"]
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert [d.attempt for d in workflow] == [1, 2]
    assert workflow[0].message_id == workflow[1].message_id
    restarts = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_STARTED]
    assert [str(owner_of(e.data)).rsplit("#", 1)[0] for e in restarts] == [f"{workflow[0].message_id}#2"]
    assert harness.step_deliveries() == []


def test_two_consumers_of_one_redelivery_never_both_take_over_an_inline_step(harness: Harness) -> None:
    # GIVEN an inline step whose owner died writing its outcome; its message comes back (receive
    # 2) and SQS hands that delivery to two consumers at once, which both replay the log (the
    # step owned by receive 1: gone) before either writes its takeover; the first lands first
    ran: list[tuple[str, int, int]] = []  # (call, attempt, other bodies of that call running)
    running: dict[str, int] = {}
    lock = threading.Lock()
    second_consumer: list[threading.Thread] = []
    app = Workflows()

    @app.step(name="add")
    def add(x: int, y: int) -> int:
        call = f"add {x}+{y}"
        with lock:
            ran.append((call, get_step_metadata().attempt, running.get(call, 0)))
            running[call] = running.get(call, 0) + 1
        if second_consumer and threading.current_thread() is threading.main_thread():
            second_consumer[0].join(timeout=10)  # the other consumer's handling runs meanwhile
        with lock:
            running[call] -= 1
        return x + y

    @app.workflow
    async def chain(n: int) -> int:
        total = 0
        for i in range(n):
            total = await add(total, i)
        return total

    redelivered: list[Delivery] = []
    second_at_takeover = threading.Event()
    first_took_over = threading.Event()

    def first_takeover(write: Write) -> EventResult:
        if redelivered:  # the other consumer replays now; this write goes once it is at its own
            delivery = redelivered.pop()
            second_consumer.append(threading.Thread(target=survive_crashes, args=(delivery, second.handle)))
            second_consumer[0].start()
            assert second_at_takeover.wait(timeout=10)
        try:
            return write()
        finally:
            first_took_over.set()

    def second_takeover(write: Write) -> EventResult:
        second_at_takeover.set()
        assert first_took_over.wait(timeout=10)
        return write()

    def takeover(request: EventRequest) -> bool:
        return request.type is EventType.STEP_STARTED and owner_of(request.data) is not None

    second = harness.runtime_for(app, world=AroundWorld(harness.spy, takeover, second_takeover))
    runtime = harness.runtime_for(app, world=AroundWorld(harness.spy, takeover, first_takeover))
    inject_at_outcome(harness, 1, Crash())  # type: ignore[arg-type]

    def two_consumers(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is QueueName.WORKFLOW and delivery.attempt == 2:
            redelivered.append(delivery)
        try:
            return survive_crashes(delivery, handle)
        finally:
            for thread in second_consumer:
                thread.join(timeout=10)

    # WHEN the run settles
    handle = runtime.start("chain", 2)
    assert harness.settle(handle, intercept=two_consumers) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 1
    # THEN the step's body ran once after the crash, never beside another run of it: the second
    # takeover was refused (the step no longer at the attempt it saw), and ran nothing
    assert ran == [("add 0+0", 1, 0), ("add 0+0", 2, 0), ("add 0+1", 1, 0)]
    starts = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_STARTED]
    assert [e.data_as(StepStartedData).takes_over for e in starts] == [1]


def test_a_step_taken_over_too_near_the_deadline_goes_by_message_without_a_second_create(
    harness: Harness,
) -> None:
    # GIVEN an inline step whose owner died writing its outcome, and its message's redelivery
    # handled with 5 s left (under the 10 s margin): no time to run the step, so it is handed
    # to a step message; the pass writes nothing else (the one that appends its creates)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    inject_at_outcome(harness, 1, Crash())  # type: ignore[arg-type]

    def near_its_deadline(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is QueueName.WORKFLOW and delivery.attempt == 2:
            delivery = dataclasses.replace(delivery, deadline=harness.clock.now() + timedelta(seconds=5))
        return survive_crashes(delivery, handle)

    # WHEN the run settles
    handle = runtime.start("chain", 2)
    assert harness.settle(handle, intercept=near_its_deadline) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 1
    # THEN the step message took it over (attempt 2), and the log holds one create per step: the
    # handed-off step was published, not appended as a new create (the DynamoDB World logged a
    # second step_created and reset the step to pending, so its takeover counted attempt 1 again)
    assert ran == ["add 0+0", "add 0+0", "add 0+1"]
    assert [d.attempt for d in harness.step_deliveries()] == [1]
    events = harness.events(handle.run_id)
    creates = [e.correlation_id for e in events if e.type is EventType.STEP_CREATED]
    assert len(creates) == len(set(creates)) == 2
    assert harness.world.steps.get(handle.run_id, creates[0]).attempt == 2


def test_a_wake_of_another_message_never_starts_an_inline_step_its_owner_may_still_run() -> None:
    with fresh_memory_harness(visibility_timeout_seconds=900) as harness:
        _wake_during_an_inline_step(harness)


def _wake_during_an_inline_step(harness: Harness) -> None:
    # GIVEN an inline step left running by an owner that crashed (its message not yet back)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    inject_at_outcome(harness, 1, Crash())  # type: ignore[arg-type]
    handle = runtime.start("chain", 2)
    harness.drain(intercept=survive_crashes)
    assert ran == ["add 0+0"]
    # WHEN another message continues the run meanwhile (a wake-up, a reconciler's pass)
    runtime.orchestrator.wake(handle.run_id, delay_seconds=0, key="another")
    harness.drain(intercept=survive_crashes)
    # THEN it did not start the step's body, and the run is still running
    assert ran == ["add 0+0"]
    assert harness.status(handle.run_id) is RunStatus.RUNNING
    # AND the owner's redelivery takes the step over and completes the run
    assert harness.settle(handle, intercept=survive_crashes) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 1
    assert ran == ["add 0+0", "add 0+0", "add 0+1"]


def test_a_failing_inline_step_is_retried_by_a_delayed_step_message(memory_harness: Harness) -> None:
    # GIVEN a step that fails on its first attempt
    harness = memory_harness
    app = Workflows()
    attempts: list[int] = []

    @app.step(name="flaky")
    def flaky() -> str:
        from world_aws import get_step_metadata

        attempts.append(get_step_metadata().attempt)
        if len(attempts) == 1:
            raise ValueError("first attempt fails")
        return "ok"

    @app.workflow
    async def wf() -> str:
        return await flaky()

    runtime = harness.runtime_for(app)
    # WHEN it settles
    handle = runtime.start("wf")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN attempt 1 ran inline, attempt 2 by a step message after the backoff
    assert handle.result(timeout=0) == "ok"
    assert attempts == [1, 2]
    types = harness.event_types(handle.run_id)
    assert types.count(EventType.STEP_RETRYING) == 1
    assert types.count(EventType.STEP_STARTED) == 1
    assert [d.attempt for d in harness.step_deliveries()] == [1]


def test_a_step_left_owned_by_a_delivery_whose_message_is_gone_is_taken_over_after_the_lease(
    harness: Harness,
) -> None:
    # GIVEN an owner that died writing its inline step's outcome, and whose message was then
    # acked by another consumer of the same delivery (SQS gave it twice): no redelivery left
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    inject_at_outcome(harness, 1, Crash())  # type: ignore[arg-type]
    owner_message: list[str] = []

    def twin_acks_the_redelivery(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is QueueName.WORKFLOW and not owner_message:
            owner_message.append(delivery.message_id)
        elif delivery.message_id in owner_message:
            return Ack()  # the other consumer of that delivery acked it: never seen again
        return survive_crashes(delivery, handle)

    handle = runtime.start("chain", 2)
    harness.drain(intercept=twin_acks_the_redelivery)
    harness.advance(10)
    harness.drain(intercept=twin_acks_the_redelivery)
    assert ran == ["add 0+0"]
    # WHEN any other message continues the run while the step's lease runs
    wake = runtime.orchestrator.wake(handle.run_id, delay_seconds=0, key="another")
    harness.drain(intercept=twin_acks_the_redelivery)
    # THEN it left the step alone, and left a fresh wake-up due when the lease is over
    # (not its own message held again: a held message's receive count would climb)
    assert ran == ["add 0+0"]
    (woken,) = [d for d in harness.deliveries if d.message_id == wake]
    assert isinstance(woken.result, Ack)
    (later,) = [
        c.detail
        for c in harness.spy.calls("queue.publish", delivery=woken.index)
        if c.detail.queue is QueueName.WORKFLOW
    ]
    assert 10 < later.delay_seconds <= RuntimeConfig().inline_lease_seconds
    # AND then takes the step over, and the run completes
    assert harness.settle(handle, intercept=twin_acks_the_redelivery) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 1
    assert ran == ["add 0+0", "add 0+0", "add 0+1"]


def test_a_continuation_that_fails_after_progress_hands_the_run_on_to_a_fresh_message(
    harness: Harness,
) -> None:
    # GIVEN a cap of 3 deliveries, and a long inline run whose continuation fails four times,
    # each time writing the outcome of a step after the first (so after progress)
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), RuntimeConfig(max_queue_deliveries=3))
    faults = inject_at_outcome(harness, [2, 4, 6, 8], RuntimeError("the store gave up"))
    # WHEN it settles
    handle = runtime.start("chain", 8)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN it completed (redelivering one message would have reached the cap at its 4th delivery)
    assert handle.result(timeout=0) == 28
    assert sum(f.fired for f in faults) == 4
    # AND each failure handed the run on to a fresh message, delivered once, that took the failed
    # step over at once (no lease wait, no wake-up of its own): 5 workflow deliveries in all
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert [d.attempt for d in workflow] == [1] * 5
    assert len({d.message_id for d in workflow}) == 5
    restarts = [e for e in harness.events(handle.run_id) if e.type is EventType.STEP_STARTED]
    assert [str(owner_of(e.data)).rsplit("#", 2)[0] for e in restarts] == [d.message_id for d in workflow[1:]]
    # AND only the four steps whose outcome was lost ran twice
    assert ran == [f"add {sum(range(i))}+{i}" for i in range(8) for _ in range(2 if 1 <= i <= 4 else 1)]
    assert harness.step_deliveries() == []


def test_a_continuation_that_fails_without_progress_is_redelivered_until_the_cap(harness: Harness) -> None:
    # GIVEN a cap of 3, and an inline step whose outcome never gets written
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), RuntimeConfig(max_queue_deliveries=3))
    inject_at_outcome(harness, range(1, 100), RuntimeError("the store gave up"))
    # WHEN it settles
    handle = runtime.start("chain", 2)
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN its one message was redelivered (no hand-on: nothing moved) and its 4th delivery failed it
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert [d.attempt for d in workflow] == [1, 2, 3, 4]
    assert len({d.message_id for d in workflow}) == 1
    assert ran == ["add 0+0"] * 3
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_code == "MAX_DELIVERIES_EXCEEDED"


def test_a_hand_on_that_cannot_be_published_redelivers_the_message(harness: Harness) -> None:
    # GIVEN a continuation that fails after progress, and the hand-on's publish fails too
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    inject_at_outcome(harness, 2, RuntimeError("the store gave up"))

    def hand_on(call: Call) -> bool:
        return call.detail.queue is QueueName.WORKFLOW and b"succeeds" in call.detail.body

    publish = harness.spy.inject("queue.publish", Transient("SQS 500"), match=hand_on)
    # WHEN it settles
    handle = runtime.start("chain", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the failed delivery's own message came back and took its step over
    assert handle.result(timeout=0) == 3
    assert publish.fired == 1
    workflow = [d for d in harness.deliveries if d.queue is QueueName.WORKFLOW]
    assert [d.attempt for d in workflow] == [1, 2]
    assert workflow[0].message_id == workflow[1].message_id
    assert ran == ["add 0+0", "add 0+1", "add 0+1", "add 1+2"]


# --- planning (unit) ---------------------------------------------------------------------


def test_a_run_whose_start_never_lands_before_the_cap_is_failed_not_left_pending(harness: Harness) -> None:
    # GIVEN a cap of 3, and every write of a pending run's start failing on its first 3 deliveries
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran), RuntimeConfig(max_queue_deliveries=3))

    def starts(call: Call) -> bool:
        detail = call.detail if isinstance(call.detail, list) else [call.detail]
        return EventType.RUN_STARTED in {getattr(r, "type", None) for r in detail}

    faults = [
        harness.spy.inject(op, RuntimeError("the store gave up"), match=starts, times=3)
        for op in ("events.append_after", "events.create")
    ]
    # WHEN it settles
    handle = runtime.start("chain", 2)
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN each of the 3 deliveries failed at the start, and the 4th started the run and failed it
    assert [f.fired for f in faults] == [3, 3]
    assert ran == []
    assert harness.event_types(handle.run_id) == [
        EventType.RUN_CREATED,
        EventType.RUN_STARTED,
        EventType.RUN_FAILED,
    ]
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_code == "MAX_DELIVERIES_EXCEEDED"


def _suspended(owned: list[OwnedStep], new: list[StepRequest]) -> Suspended:
    return Suspended(new_steps=new, owned_steps=owned)


def _planner(harness: Harness, config: RuntimeConfig) -> InlineSteps:
    runtime = harness.runtime_for(Workflows(), config)
    return InlineSteps(harness.world, runtime.app, runtime.dispatcher, config, runtime.orchestrator._pool)


@pytest.mark.parametrize(
    ("owner_tag", "age", "expected"),
    [
        ("m-1#1#aa", 10, "left"),  # another message's owner, within the lease
        ("m-2#1#aa", 10, "reclaim"),  # an earlier delivery of our own message
        ("m-2#2#bb", 10, "left"),  # another handling of this same delivery (an SQS duplicate)
        ("m-2#2#me", 10, "adopt"),  # ourselves, with a lost answer: ours to run, no new start
        ("m-1#1#aa", 31, "reclaim"),  # past the lease (30 s), never renewed: anyone may
    ],
)
def test_owned_steps_are_taken_over_only_from_a_gone_owner(
    memory_harness: Harness, owner_tag: str, age: int, expected: str
) -> None:
    planner = _planner(memory_harness, RuntimeConfig())
    since = memory_harness.clock.now() - timedelta(seconds=age)
    owned = OwnedStep(StepRequest("step_1", "add", b""), owner_tag, since, attempt=1)
    plan = planner.plan("run_x", _suspended([owned], []), Owner("m-2", 2, handling="me"))
    assert (plan.reclaim == [owned]) is (expected == "reclaim")
    assert (plan.adopt == [owned]) is (expected == "adopt")


@pytest.mark.parametrize(
    ("owner_tag", "expected"),
    [
        ("m-1#3#aa", "reclaim"),  # the delivery that handed the run on to us
        ("m-1#2#aa", "reclaim"),  # an earlier delivery of its message
        ("m-1#4#aa", "left"),  # a later delivery of its message: may still run
        ("m-3#3#aa", "left"),  # another message
    ],
)
def test_a_hand_on_takes_over_the_steps_of_the_delivery_it_succeeds(
    memory_harness: Harness, owner_tag: str, expected: str
) -> None:
    planner = _planner(memory_harness, RuntimeConfig())
    since = memory_harness.clock.now() - timedelta(seconds=10)
    owned = OwnedStep(StepRequest("step_1", "add", b""), owner_tag, since, attempt=1)
    plan = planner.plan("run_x", _suspended([owned], []), Owner("m-2", 1, handling="me", predecessor="m-1#3"))
    assert (plan.reclaim == [owned]) is (expected == "reclaim")


def test_no_inline_step_starts_when_the_deadline_is_within_the_margin(memory_harness: Harness) -> None:
    planner = _planner(memory_harness, RuntimeConfig(inline_margin_seconds=10))
    new = [StepRequest(f"step_{i}", "add", b"") for i in range(2)]
    now = memory_harness.clock.now()
    near = planner.plan("run_x", _suspended([], new), Owner("m", 1, deadline=now + timedelta(seconds=9)))
    far = planner.plan("run_x", _suspended([], new), Owner("m", 1, deadline=now + timedelta(seconds=60)))
    assert near == InlinePlan(dispatch=new)
    assert far.create == new and far.dispatch == []


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [(None, 0.1), ("0", 0.0), ("2.5", 2.5), (" ", 0.1)],
    ids=["default", "off", "set", "blank"],
)
def test_fast_rounds_are_set_from_the_environment(raw: str | None, seconds: float) -> None:
    env = {} if raw is None else {"WORKFLOW_INLINE_FAST_SECONDS": raw}
    assert RuntimeConfig.from_env(env).inline_fast_seconds == seconds


@pytest.mark.parametrize("raw", ["fast", "-1", "nan"])
def test_a_bad_fast_rounds_setting_is_refused_by_name(raw: str) -> None:
    with pytest.raises(BadInput, match="WORKFLOW_INLINE_FAST_SECONDS"):
        RuntimeConfig.from_env({"WORKFLOW_INLINE_FAST_SECONDS": raw})
