"""Issue 6: the delivery cap (contract §4.3) and the deployment guard (contract §5.4).

A message delivered more than ``max_queue_deliveries`` times fails its run with
``MAX_DELIVERIES_EXCEEDED`` instead of being dead-lettered silently. A World with
deployment affinity re-routes a step message that reached the wrong deployment,
keeping its step and run identity and counting the re-routes; after 3 the run
fails with ``DEPLOYMENT_MISMATCH``. Re-routes are delayed messages, so the guard
runs on the in-memory World (moto delays SQS messages in wall-clock time).
"""

from __future__ import annotations

from collections.abc import Iterator

import cbor2
import pytest

from harness.harness import Harness, MemoryPump
from harness.spy import Call
from world_aws import RuntimeConfig, WorkflowFailedError, Workflows
from world_aws.contract.clock import ManualClock
from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.contract.records import EventType, RunStatus
from world_aws.contract.transport import decode_payload, encode_payload
from world_aws.contract.world import Ack, QueueName, WorldCapabilities
from world_aws.errors import BadInput, Transient
from world_aws.local.memory import create_memory_world

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched


def stamping_app(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="guard.stamp")
    def stamp(doc: str) -> str:
        ran.append(doc)
        return f"stamped {doc}"

    @app.workflow
    async def stamp_doc(doc: str) -> str:
        return await stamp(doc)

    return app


def test_message_delivered_more_than_the_cap_fails_the_run(harness: Harness) -> None:
    # GIVEN a cap of 3 deliveries, and a World whose step claims keep failing transiently
    def claim(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.STEP_STARTED

    harness.spy.inject("events.create", Transient("DynamoDB 500"), match=claim, times=1_000)
    ran: list[str] = []
    runtime = harness.runtime_for(
        stamping_app(ran), RuntimeConfig(max_inline_steps=0, max_queue_deliveries=3)
    )
    # WHEN the run settles
    handle = runtime.start("stamp_doc", "d-1")
    assert harness.settle(handle) is RunStatus.FAILED
    # THEN the step message was tried 3 times, and its 4th delivery failed the run and was acked
    deliveries = harness.step_deliveries()
    assert [d.attempt for d in deliveries] == [1, 2, 3, 4]
    assert all(isinstance(d.error, Transient) for d in deliveries[:3])
    assert isinstance(deliveries[3].result, Ack)
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_code == "MAX_DELIVERIES_EXCEEDED"
    assert "delivered 4 times" in failed.value.error_message
    assert ran == []


@pytest.fixture
def affinity_harness() -> Iterator[Harness]:
    """A harness whose World declares deployment affinity and serves deployment "dpl_new"."""
    clock = ManualClock()
    world = create_memory_world(
        clock=clock, capabilities=WorldCapabilities(deployment_affinity=True), deployment_id="dpl_new"
    )
    built = Harness("memory", world, clock, MemoryPump(world))
    built.default_config = RuntimeConfig(max_inline_steps=0)
    try:
        yield built
    finally:
        built.close()
        world.close()


def step_message(h: Harness) -> tuple[InvokePayload, float]:
    """The one queued step message, and its delay from now in seconds."""
    [pending] = h.pending_messages(QueueName.STEP)
    payload = decode_payload(pending.body)
    assert isinstance(payload, InvokePayload)
    return payload, (pending.due - h.clock.now()).total_seconds()


def test_step_message_at_the_wrong_deployment_is_rerouted_intact(affinity_harness: Harness) -> None:
    # GIVEN a run started by deployment "dpl_old", its step message queued
    h = affinity_harness
    ran: list[str] = []
    old = h.runtime_for(stamping_app(ran), world=h.spy.with_deployment("dpl_old"))
    handle = old.start("stamp_doc", "d-2")
    h.drain(old, queues=[QueueName.WORKFLOW])
    original, _ = step_message(h)
    assert original.run_context is not None and original.run_context.deployment_id == "dpl_old"
    # WHEN deployment "dpl_new" receives it
    new = h.runtime_for(stamping_app(ran))
    h.drain(new, queues=[QueueName.STEP])
    # THEN it was re-enqueued, delayed, with its step, input and run identity intact and the count + 1
    rerouted, delay = step_message(h)
    assert rerouted.deployment_mismatch_retry_count == 1
    assert (rerouted.step_id, rerouted.step_name) == (original.step_id, original.step_name)
    assert rerouted.step_input == original.step_input and rerouted.step_input is not None
    assert rerouted.run_context == original.run_context
    assert 0 < delay <= 8
    assert ran == []
    assert EventType.STEP_STARTED not in h.event_types(handle.run_id)
    # AND the pinned deployment runs it when it gets there
    assert h.settle(handle, runtime=old) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "stamped d-2"
    assert ran == ["d-2"]


def test_step_message_rerouted_three_times_fails_the_run_with_deployment_mismatch(
    affinity_harness: Harness,
) -> None:
    # GIVEN a run pinned to "dpl_old", whose step message only ever reaches "dpl_new"
    h = affinity_harness
    ran: list[str] = []
    old = h.runtime_for(stamping_app(ran), world=h.spy.with_deployment("dpl_old"))
    handle = old.start("stamp_doc", "d-3")
    h.drain(old, queues=[QueueName.WORKFLOW])
    new = h.runtime_for(stamping_app(ran))
    # WHEN every delivery goes to "dpl_new"
    assert h.settle(handle, runtime=new) is RunStatus.FAILED
    # THEN it was re-routed 3 times (counts 0, 1, 2 in, each delay at most 8 s), then the run failed
    counts = [d.payload.deployment_mismatch_retry_count for d in h.step_deliveries()]  # type: ignore[union-attr]
    assert counts == [0, 1, 2, 3]
    gaps = [
        (b.at - a.at).total_seconds()
        for a, b in zip(h.step_deliveries(), h.step_deliveries()[1:], strict=False)
    ]
    assert all(0 < gap <= 8 for gap in gaps)
    with pytest.raises(WorkflowFailedError) as failed:
        handle.result(timeout=0)
    assert failed.value.error_code == "DEPLOYMENT_MISMATCH"
    assert "dpl_old" in failed.value.error_message and "dpl_new" in failed.value.error_message
    assert ran == []
    assert h.pending_messages(QueueName.STEP) == []


def test_malformed_message_is_dead_lettered_without_stopping_the_others(memory_harness: Harness) -> None:
    # GIVEN a step message whose input is text instead of bytes, queued before a normal run
    h = memory_harness
    ran: list[str] = []
    runtime = h.runtime_for(stamping_app(ran))
    mangled = cbor2.dumps(
        {"run_id": "wrun_X", "step_id": "step_X_1", "step_name": "s", "step_input": {"input": "x"}}
    )
    h.world.queue.publish(QueueName.STEP, mangled)
    h.world.queue.publish(
        QueueName.WORKFLOW, encode_payload(HealthCheck(health_check=True, correlation_id="hc-1"))
    )
    handle = runtime.start("stamp_doc", "d-4")
    # WHEN the queues settle
    assert h.settle(handle) is RunStatus.COMPLETED
    h.settle()
    # THEN the run completed, the health check was acked, and the mangled message was
    # refused on every delivery, naming the bad field, until it reached the dead-letter list
    assert ran == ["d-4"]
    [dead] = h.world.memory_queue.dead_letters(QueueName.STEP)  # type: ignore[attr-defined]
    assert dead.body == mangled
    assert dead.last_error is not None and "step_input" in dead.last_error
    assert "BadInput" in dead.last_error
    refused = [d for d in h.deliveries if d.payload is None]
    assert len(refused) == dead.attempt and all(isinstance(d.error, BadInput) for d in refused)
    health = [d for d in h.deliveries if isinstance(d.payload, HealthCheck)]
    assert len(health) == 1 and isinstance(health[0].result, Ack)


class _FlakyRunReads:
    """A run store whose ``get`` fails ``failures`` times with a Transient, then answers."""

    def __init__(self, inner: object, failures: int) -> None:
        self._inner = inner
        self.failures = failures
        self.calls = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def get(self, run_id: str, **kwargs: object) -> object:
        self.calls += 1
        if self.calls <= self.failures:
            raise Transient("injected: the run read timed out")
        return self._inner.get(run_id, **kwargs)  # type: ignore[attr-defined]


def test_a_transient_run_read_before_the_replay_is_tried_again_in_process(memory_harness: Harness) -> None:
    # GIVEN a started run whose continuation's first run reads fail twice
    app = Workflows()

    @app.step
    def one() -> int:
        return 1

    @app.workflow
    async def wf() -> int:
        return await one()

    runtime = memory_harness.runtime_for(app)
    handle = runtime.start("wf")
    flaky = _FlakyRunReads(memory_harness.world.runs, failures=2)
    memory_harness.world.runs = flaky  # type: ignore[misc, assignment]
    # WHEN its message is delivered
    status = memory_harness.settle(handle)
    # THEN the run completed in that one delivery: the read was tried again in process
    assert status is RunStatus.COMPLETED
    assert flaky.calls >= 3
    assert [(d.error, d.attempt) for d in memory_harness.deliveries] == [(None, 1)] * len(
        memory_harness.deliveries
    )
