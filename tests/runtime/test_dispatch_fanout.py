"""Issue 6 (contract §5.1): a 64-branch fan-out — no run read before a claim, one continuation at the end.

Each step message carries ``run_context``, so a branch claims its step without
reading the run; the World's terminal-run fence on ``step_started`` is the
liveness check. After its outcome, a branch asks whether any other step is
pending (``steps.any_pending``): only one that finds none (the last completer)
claims the continuation, which reads the run once, and continues the workflow
inline; of branches that finish together, one wins the claim.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from harness.harness import Harness
from harness.spy import Call
from world_aws import Workflows
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import (
    EventRequest,
    EventType,
    Run,
    RunStatus,
    StepCompletedData,
    StepStartedData,
    StepStatus,
)
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.serde.limits import Payload

from .conftest import memory_world_of

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched

BRANCHES = 64
# The World calls that read the run item: the legacy prologue's and the last completer's.
RUN_READS = ("runs.get", "runs.claim_continuation")


def fanout_app() -> Workflows:
    app = Workflows()

    @app.step
    def pack(order_id: str, part: int) -> str:
        return f"{order_id}/{part}"

    @app.workflow
    async def ship(order_id: str) -> int:
        parcels = await asyncio.gather(*(pack(order_id, i) for i in range(BRANCHES)))
        return len(set(parcels))

    return app


def is_event(call: Call, etype: EventType) -> bool:
    return call.op == "events.create" and getattr(call.detail, "type", None) is etype


def test_sixty_four_branch_fan_out_claims_without_run_reads_and_continues_once(harness: Harness) -> None:
    # GIVEN a workflow that fans out to 64 steps, with continuations counted (in memory,
    # and through SQS and DynamoDB on moto)
    h = harness
    runtime = h.runtime_for(fanout_app())
    continuations: list[int | None] = []
    continue_run = runtime.orchestrator.continue_run

    def counted(run: Run, **options: Any) -> HandlerResult:
        continuations.append(h.spy.current_delivery())
        return continue_run(run, **options)

    runtime.orchestrator.continue_run = counted  # type: ignore[method-assign]
    handle = runtime.start("ship", "o-64")
    h.drain(queues=[QueueName.WORKFLOW])
    if h.kind == "memory":
        assert h.pending_messages(QueueName.WORKFLOW) == []
    stats = memory_world_of(h).stats if h.kind == "memory" else None
    before = stats.snapshot() if stats is not None else None
    # WHEN every step message is delivered
    h.drain(queues=[QueueName.STEP])
    after = stats.snapshot() if stats is not None else None
    # THEN 64 steps completed, and the last completer finished the run inline
    assert handle.status() is RunStatus.COMPLETED
    assert handle.result(timeout=0) == BRANCHES
    assert h.event_types(handle.run_id).count(EventType.STEP_COMPLETED) == BRANCHES
    step_deliveries = h.step_deliveries()
    assert len(step_deliveries) == BRANCHES
    assert all(d.attempt == 1 for d in step_deliveries)
    # AND no step delivery read the run before its claim
    for delivery in step_deliveries:
        calls = h.spy.calls(delivery=delivery.index)
        claim = next(c for c in calls if is_event(c, EventType.STEP_STARTED))
        assert [c for c in calls if c.op in RUN_READS and c.start < claim.start] == []
    # AND the run was read once in the whole fan-out, by the last completer after its
    # completion (its continuation claim returns the run), which also made the one continuation
    run_reads = [c for c in h.spy.journal if c.op in RUN_READS]
    last = step_deliveries[-1].index
    assert [
        c.delivery for c in run_reads if c.delivery is not None and c.delivery >= step_deliveries[0].index
    ] == [last]
    completion = next(c for c in h.spy.calls(delivery=last) if is_event(c, EventType.STEP_COMPLETED))
    assert completion.end < run_reads[-1].start
    assert [c for c in continuations if c is not None and c >= step_deliveries[0].index] == [last]
    # AND the World's own counter agrees: one run read during the step phase
    if before is not None and after is not None:
        assert after["run_reads"] - before["run_reads"] == 1


def test_sixty_four_branch_fan_out_completes_under_concurrent_consumers(memory_harness: Harness) -> None:
    # GIVEN 8 consumer threads per queue, branches racing to be the last completer
    h = memory_harness
    world = memory_world_of(h)
    runtime = h.runtime_for(fanout_app())
    step_continuations: list[str] = []
    on_step = threading.local()
    continue_run = runtime.orchestrator.continue_run

    def counted(run: Run, **options: Any) -> HandlerResult:
        if getattr(on_step, "delivery", False):
            step_continuations.append(run.run_id)
        return continue_run(run, **options)

    def handle(delivery: Delivery) -> HandlerResult:
        payload = decode_payload(delivery.body)
        on_step.delivery = isinstance(payload, InvokePayload) and payload.step_id is not None
        return runtime.handle(delivery)

    runtime.orchestrator.continue_run = counted  # type: ignore[method-assign]
    handles = [runtime.start("ship", f"o-{i}") for i in range(3)]
    # WHEN they deliver everything
    consumers = world.start_consumers(handle, workers_per_queue=8)
    try:
        assert consumers.wait_idle(30)
    finally:
        consumers.stop()
    # THEN every run completed, with each of its steps started and completed exactly once,
    # and each fan-out continued exactly once by its branches (the continuation claim)
    assert sorted(step_continuations) == sorted(handle.run_id for handle in handles)
    for handle in handles:
        assert handle.status() is RunStatus.COMPLETED
        assert handle.result(timeout=0) == BRANCHES
        types = h.event_types(handle.run_id)
        assert types.count(EventType.STEP_STARTED) == BRANCHES
        assert types.count(EventType.STEP_COMPLETED) == BRANCHES
        assert types.count(EventType.RUN_COMPLETED) == 1
    assert world.memory_queue.dead_letters(QueueName.STEP) == []


def pair_app() -> Workflows:
    app = Workflows()

    @app.step(name="pair.part")
    def part(n: int) -> int:
        return n

    @app.workflow(name="pair")
    async def pair() -> int:
        a, b = await asyncio.gather(part(1), part(2))
        return a + b

    return app


def test_a_completer_refused_by_a_claim_that_may_have_missed_it_leaves_a_wake_up(harness: Harness) -> None:
    # GIVEN a two-branch fan-out, its step messages queued
    h = harness
    runtime = h.runtime_for(pair_app())
    handle = runtime.start("pair")
    h.drain(queues=[QueueName.WORKFLOW])
    assert len(h.world.steps.list(handle.run_id)) == 2
    raced: list[str] = []

    def other_branch_claims_first(call: Call) -> bool:
        # As the first delivered branch checks for pending steps, the other one has finished
        # and claimed the continuation past this branch's outcome, and that continuation
        # missed the outcome and suspended (ARCHITECTURE §5: a create that landed after its
        # check): modelled by the other's outcome and claim, written here, continuing nothing.
        if raced:
            return False
        other = next(s for s in h.world.steps.list(handle.run_id) if s.status is not StepStatus.COMPLETED)
        raced.append(other.step_id)
        name = StepStartedData(step_name=other.step_name)
        h.world.events.create(handle.run_id, EventRequest(EventType.STEP_STARTED, other.step_id, name))
        # its own result: the part's argument (whichever of the two branches it is)
        (value,) = runtime.app.serializer.loads(h.world.steps.get(handle.run_id, other.step_id).input)["args"]
        output = runtime.app.serializer.dumps(value, context="the other part", payload=Payload.STEP_RESULT)
        done = EventRequest(EventType.STEP_COMPLETED, other.step_id, StepCompletedData(output=output))
        event = h.world.events.create(handle.run_id, done).event
        assert event is not None
        assert h.world.runs.claim_continuation(handle.run_id, after=event.position, claimer=other.step_id)
        return False

    def the_other_branchs_message_is_gone(
        delivery: Delivery, handle_message: MessageHandler
    ) -> HandlerResult:
        payload = decode_payload(delivery.body)
        if isinstance(payload, InvokePayload) and payload.step_id in raced:
            return Ack()  # its branch (above) ran it already
        return handle_message(delivery)

    h.spy.inject("steps.any_pending", RuntimeError("unused"), match=other_branch_claims_first)
    # WHEN the first branch is delivered (its outcome, its check: none pending, its claim:
    # refused by the other's) and the run settles, without the reconciler
    status = h.settle(handle, intercept=the_other_branchs_message_is_gone)
    # THEN the refused branch left a wake-up, whose continuation read both outcomes
    assert raced
    assert status is RunStatus.COMPLETED
    assert handle.result(timeout=0) == 3
