"""The fault injectors do what the chaos suite claims: at the World boundary, in botocore, on the clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import pytest

from harness.chaos.aws import BotocoreFaults
from harness.fault_plan import Crash, Fault, FaultPlan, rates_for
from harness.faulty_world import FaultyWorld
from harness.sqs_pump import SqsPump
from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventRequest, EventType, RunCreatedData, RunCreation
from world_aws.contract.world import Ack, Delivery, QueueName, World
from world_aws.errors import Conflict, Throttled, Transient
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.testing.aws_factory import aws_world

RUN = "wrun_01CHAOSMACHINERY000000000"


def created(run_id: str = RUN) -> EventRequest:
    creation = RunCreation(workflow_name="wf", deployment_id="dpl_local", spec_version=3, input=b"\x80")
    return EventRequest(EventType.RUN_CREATED, data=RunCreatedData(creation=creation))


@pytest.fixture
def memory() -> Iterator[MemoryWorld]:
    world = create_memory_world(clock=ManualClock())
    yield world
    world.close()


def only(fault: Fault) -> FaultPlan:
    return FaultPlan(seed=1, rates={fault: 1.0})


def test_same_seed_fires_the_same_faults_at_the_same_points() -> None:
    # GIVEN two plans with one seed and one with another, asked at the same points
    points = [f"events.create|run-{i % 7}" for i in range(300)]
    plans = [FaultPlan(s, rates_for(["all"])) for s in (5, 5, 6)]
    # WHEN each is asked every fault at every point
    for plan in plans:
        for point in points:
            for fault in Fault:
                plan.fires(fault, point)
    # THEN the same seed gives the same journal; another seed another one
    assert plans[0].journal == plans[1].journal
    assert plans[0].journal != plans[2].journal
    assert sum(plans[0].fired.values()) > 0


def test_unknown_fault_group_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault group"):
        rates_for(["nosuch"])


def test_transient_fault_fails_the_call_before_it_is_made(memory: MemoryWorld) -> None:
    # GIVEN a World whose every call fails transiently, called by a client
    faulty = FaultyWorld(memory, only(Fault.TRANSIENT))
    # WHEN the client creates a run
    with faulty.client(), pytest.raises((Throttled, Transient)):
        faulty.events.create(RUN, created())
    # THEN nothing was written
    assert memory.events.list(RUN) == []


def test_lost_answer_fault_writes_then_raises(memory: MemoryWorld) -> None:
    faulty = FaultyWorld(memory, only(Fault.LOST))
    with faulty.client(), pytest.raises(Transient, match="lost"):
        faulty.events.create(RUN, created())
    assert [e.type for e in memory.events.list(RUN)] == [EventType.RUN_CREATED]


def test_repeat_fault_applies_a_write_twice_and_answers_the_second(memory: MemoryWorld) -> None:
    # GIVEN every write repeated (a client retry of a request that committed)
    faulty = FaultyWorld(memory, only(Fault.REPEAT))
    # WHEN a client creates a run and publishes a message without a key
    with faulty.client():
        with pytest.raises(Conflict):
            faulty.events.create(RUN, created())
        faulty.queue.publish(QueueName.WORKFLOW, b"body")
    # THEN one run_created (the repeat was refused) and two messages
    assert len(memory.events.list(RUN)) == 1
    assert len(memory.memory_queue.pending(QueueName.WORKFLOW)) == 2


@pytest.mark.parametrize("side", ["before", "after"])
def test_crash_fault_fires_only_inside_a_delivery(memory: MemoryWorld, side: str) -> None:
    # GIVEN every call crashing, and a run id whose create crashes on ``side``
    want = 0 if side == "before" else 1
    run_id = next(
        f"wrun_01CRASH{i:02d}"
        for i in range(100)
        if FaultPlan(1).choose(f"crash-side|events.create|wrun_01CRASH{i:02d}|run_created:None", 2) == want
    )
    faulty = FaultyWorld(memory, only(Fault.CRASH_CALL))
    # WHEN a client calls it, then a delivery does
    faulty.events.create(RUN, created())  # outside a delivery: no crash (and no fault)
    faulty.delivering = True
    with pytest.raises(Crash, match=side):
        faulty.events.create(run_id, created())
    # THEN the crash is a BaseException, not an Exception, and "after" means the call ran
    assert not issubclass(Crash, Exception)
    assert len(memory.events.list(RUN)) == 1
    assert len(memory.events.list(run_id)) == (1 if side == "after" else 0)


def test_armed_copy_runs_inside_the_original_at_the_chosen_call(memory: MemoryWorld) -> None:
    # GIVEN a copy armed for the 2nd call from now
    faulty = FaultyWorld(memory, FaultPlan(seed=1))
    seen: list[int] = []
    faulty.arm_copy(2, lambda: seen.append(len(memory.events.list(RUN))))
    # WHEN two calls are made
    faulty.events.create(RUN, created())
    faulty.events.list(RUN)
    # THEN the copy ran once, before the second call (after the first had written)
    assert seen == [1]


@pytest.fixture
def aws() -> Iterator[AwsWorld]:
    with aws_world(ManualClock()) as world:
        yield world


def test_sqs_pump_holds_a_delayed_message_until_the_manual_clock_reaches_it(aws: AwsWorld) -> None:
    # GIVEN an AWS World whose delayed sends the pump holds to its manual clock
    clock = cast(ManualClock, aws.clock)
    pump = SqsPump(aws)
    aws.queue.publish(QueueName.WORKFLOW, b"later", delay_seconds=30)
    got: list[bytes] = []

    def handler(delivery: Delivery) -> Ack:
        got.append(delivery.body)
        return Ack()

    # WHEN the pump delivers now, and again once the clock moved 30 s
    pump.deliver_visible(handler, [QueueName.WORKFLOW])
    assert got == []
    due = pump.next_due()
    assert due is not None and (due - clock.now()).total_seconds() == pytest.approx(30, abs=1)
    clock.advance(30)
    pump.clock_moved()
    # THEN the message came only then
    pump.deliver_visible(handler, [QueueName.WORKFLOW])
    assert got == [b"later"]


def test_botocore_lost_answer_lands_the_write_and_raises(aws: AwsWorld) -> None:
    # GIVEN every AWS call of the World losing its answer, as a client
    plan = only(Fault.LOST)
    faulty = FaultyWorld(cast(World, aws), plan, inject_calls=False)
    BotocoreFaults(plan, faulty).attach(aws.clients)
    # WHEN the client creates a run
    with faulty.client(), pytest.raises(Transient):
        faulty.events.create(RUN, created())
    # THEN the run exists
    assert [e.type for e in aws.events.list(RUN)] == [EventType.RUN_CREATED]


def test_botocore_repeat_sends_a_committed_request_again(aws: AwsWorld) -> None:
    # GIVEN every AWS call of the World retried once after it committed
    plan = only(Fault.REPEAT)
    faulty = FaultyWorld(cast(World, aws), plan, inject_calls=False)
    BotocoreFaults(plan, faulty).attach(aws.clients)
    # WHEN the client publishes one message without an idempotency key
    with faulty.client():
        faulty.queue.publish(QueueName.WORKFLOW, b"once")
    # THEN SQS holds two
    got: list[bytes] = []
    SqsPump(aws).deliver_visible(lambda d: got.append(d.body) or Ack(), [QueueName.WORKFLOW])
    assert got == [b"once", b"once"]


def test_botocore_transient_faults_past_the_retries_surface_as_world_errors(aws: AwsWorld) -> None:
    # GIVEN every call failing on every attempt where the plan says persistent
    plan = only(Fault.TRANSIENT)
    faulty = FaultyWorld(cast(World, aws), plan, inject_calls=False)
    BotocoreFaults(plan, faulty).attach(aws.clients)
    outcomes = []
    # WHEN a client makes a few reads
    with faulty.client():
        for i in range(12):
            try:
                faulty.runs.list(limit=i + 1)
                outcomes.append("ok")
            except (Throttled, Transient) as exc:
                outcomes.append(type(exc).__name__)
    # THEN some were absorbed by botocore's retries and some reached the World as its own kinds
    assert "ok" in outcomes
    assert {"Throttled", "Transient"} & set(outcomes)


def test_a_run_whose_first_message_was_lost_is_woken_by_the_drivers_reconciler_pass() -> None:
    # GIVEN the chaos driver on a fault-free memory World whose first workflow message is lost
    from harness.chaos.checks import check_run
    from harness.chaos.driver import ChaosDriver
    from harness.chaos.run import memory_setup
    from harness.chaos.workload import Executions, chaos_app
    from world_aws import Runtime, RuntimeConfig

    plan = FaultPlan(seed=3, rates=rates_for(["none"], 1.0))
    app = chaos_app(Executions(), plan)
    with memory_setup(plan, visibility_seconds=2.0) as setup:
        inner = setup.faulty.inner
        publish = inner.queue.publish
        lost: list[bytes] = []

        def lose_the_first(queue: QueueName, body: bytes, **kwargs: object) -> str:
            if queue is QueueName.WORKFLOW and not lost:
                lost.append(body)
                return "lost-message"
            return publish(queue, body, **kwargs)  # type: ignore[arg-type]

        inner.queue.publish = lose_the_first  # type: ignore[method-assign]
        config = RuntimeConfig(inline_lease_seconds=60)
        runtime = setup.harness.runtime_for(app, config, world=setup.faulty)
        copies = Runtime(setup.faulty, app, config)
        driver = ChaosDriver(
            setup.harness, setup.faulty, runtime, copies, visibility_seconds=2.0, max_sim_seconds=900
        )
        try:
            # WHEN one batch of one run is driven to quiet
            (caller,) = driver.run_batch(range(1))
        finally:
            copies.close()
        # THEN the run sat pending with no message until the reconciler's pass woke it,
        # and then it ended soundly: late, counted as reconciled, not stuck
        assert lost and driver.reconciled == [caller.run_id]
        # and the report shows the run as the reconciler found it: created, nothing after
        assert driver.reconciled_details[caller.run_id][1:] == ["1 run_created"]
        assert driver.reconciled_details[caller.run_id][0].startswith("chaos.mix pending")
        assert check_run(inner, app.serializer, caller) == []
        assert inner.runs.get(caller.run_id).status.terminal
        setup.harness.close()


def test_a_storm_throttles_every_call_of_a_delivery_while_it_lasts(memory: MemoryWorld) -> None:
    # GIVEN a World behind a plan with no rate faults, and a storm lasting while a flag is up
    plan = FaultPlan(seed=1, rates={})
    faulty = FaultyWorld(memory, plan)
    storming = [True]
    faulty.storm = lambda: storming[0]
    # WHEN a delivery calls during the storm, a client calls during it, and a delivery after it
    faulty.delivering = True
    with pytest.raises(Throttled, match="storm"):
        faulty.events.create(RUN, created())
    faulty.delivering = False
    with faulty.client():
        assert faulty.events.create(RUN, created()).event is not None
    storming[0] = False
    faulty.delivering = True
    with pytest.raises(Conflict):
        faulty.events.create(RUN, created())
    # THEN only the delivery's call in the storm was throttled (a client's retries are its own
    # business), and the plan counted it
    assert plan.fired[Fault.STORM] == 1 and plan.journal[0].startswith("storm events.create")
