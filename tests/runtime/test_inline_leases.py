"""Inline leases renewed while the owner lives (``worker/leases.py``).

A crashed owner whose message never comes back (its twin acked it) is taken over one
short lease (``inline_lease_seconds``, 30 s) after its last renewal, not after 900 s;
a live owner whose body runs many leases long renews and is never taken over.
"""

from __future__ import annotations

import threading
from datetime import timedelta

from harness.harness import Harness
from world_aws import Workflows
from world_aws.contract.records import Event, EventType, RunStatus
from world_aws.contract.world import Ack, Delivery, HandlerResult, MessageHandler, QueueName
from world_aws.worker.config import RuntimeConfig

from .failures import Crash, survive_crashes
from .inline_support import inject_at_outcome

LEASE = RuntimeConfig().inline_lease_seconds
# Real seconds a test waits for a body to start or end before it fails (a deadlock guard).
GUARD_SECONDS = 30.0


def slow_app(entered: threading.Event, release: threading.Event, ran: list[str]) -> Workflows:
    """One step whose body waits for ``release`` (its owner stays live as long as the test wants)."""
    app = Workflows()

    @app.step(name="slow")
    def slow() -> str:
        ran.append("slow")
        entered.set()
        assert release.wait(GUARD_SECONDS), "the test never released the body"
        return "done"

    @app.workflow
    async def wf() -> str:
        return await slow()

    return app


def _starts(harness: Harness, run_id: str) -> list[Event]:
    return [e for e in harness.events(run_id) if e.type is EventType.STEP_STARTED]


def test_default_lease_is_three_heartbeats() -> None:
    # The template's WORKFLOW_HEARTBEAT_SECONDS is 10: a lease of three periods, renewed every one.
    assert LEASE == 30
    assert RuntimeConfig.from_env({}).inline_lease_seconds == 30
    assert RuntimeConfig.from_env({"WORKFLOW_INLINE_LEASE_SECONDS": "45"}).inline_lease_seconds == 45


def test_a_crashed_owner_is_taken_over_one_short_lease_after_its_last_renewal(harness: Harness) -> None:
    # GIVEN an owner whose body ran 40 s (renewing its lease) and which then died writing its
    # outcome, its message acked by the other consumer of that delivery: no redelivery comes
    entered, release, ran = threading.Event(), threading.Event(), []
    runtime = harness.runtime_for(slow_app(entered, release, ran))
    inject_at_outcome(harness, 1, Crash())  # type: ignore[arg-type]
    owner_message: list[str] = []

    def twin_acks_the_redelivery(delivery: Delivery, handle: MessageHandler) -> HandlerResult:
        if delivery.queue is QueueName.WORKFLOW and not owner_message:
            owner_message.append(delivery.message_id)
        elif delivery.message_id in owner_message:
            return Ack()
        return survive_crashes(delivery, handle)

    handle = runtime.start("wf")
    owner = threading.Thread(target=lambda: harness.drain(intercept=twin_acks_the_redelivery), daemon=True)
    owner.start()
    assert entered.wait(GUARD_SECONDS)
    created = harness.clock.now()
    for _ in range(2):
        harness.clock.advance(LEASE * 2 / 3)
        assert runtime.leases.beat() == 1  # one renewal per (run, owner), not per step
    renewed = harness.clock.now()
    release.set()
    owner.join(GUARD_SECONDS)
    assert not owner.is_alive()
    assert ran == ["slow"]
    assert harness.world.steps.lease(handle.run_id, _owner_tag(harness, handle.run_id)) == renewed
    # WHEN another message continues the run 10 s after the owner's last renewal
    harness.clock.advance(10)
    harness.drain(intercept=twin_acks_the_redelivery)
    runtime.orchestrator.wake(handle.run_id, delay_seconds=0, key="another")
    harness.drain(intercept=twin_acks_the_redelivery)
    # THEN the step is left alone (its lease runs from the renewal, not from its create 50 s ago)
    assert ran == ["slow"] and _starts(harness, handle.run_id) == []
    assert harness.clock.now() - created > timedelta(seconds=LEASE)
    # AND the run is taken over once that lease is over, in seconds, not the old 900 s
    release.set()
    assert harness.settle(handle, intercept=twin_acks_the_redelivery) is RunStatus.COMPLETED
    (takeover,) = _starts(harness, handle.run_id)
    assert timedelta(seconds=LEASE) <= takeover.created_at - renewed <= timedelta(seconds=LEASE + 2)
    assert ran == ["slow", "slow"]
    assert handle.result(timeout=0) == "done"


def test_a_live_slow_owner_is_never_taken_over_while_it_renews(memory_harness: Harness) -> None:
    # GIVEN an owner whose body runs ten leases long, renewing as it goes
    harness = memory_harness
    entered, release, ran = threading.Event(), threading.Event(), []
    runtime = harness.runtime_for(slow_app(entered, release, ran))
    handle = runtime.start("wf")
    owner = threading.Thread(target=harness.drain, daemon=True)
    owner.start()
    assert entered.wait(GUARD_SECONDS)
    # WHEN other deliveries continue the run all along (a wake-up every two thirds of a lease)
    for i in range(15):
        harness.clock.advance(LEASE * 2 / 3)
        assert runtime.leases.beat() == 1
        runtime.orchestrator.wake(handle.run_id, delay_seconds=0, key=f"wake-{i}")
        harness.drain()
        # THEN none of them starts the step beside its live owner
        assert ran == ["slow"] and _starts(harness, handle.run_id) == []
    release.set()
    owner.join(GUARD_SECONDS)
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert ran == ["slow"] and handle.result(timeout=0) == "done"
    assert runtime.leases.renewals == 15


def test_bodies_shorter_than_a_renewal_period_write_no_renewal(memory_harness: Harness) -> None:
    # GIVEN a run of quick inline steps
    harness = memory_harness
    entered, release, ran = threading.Event(), threading.Event(), []
    release.set()
    runtime = harness.runtime_for(slow_app(entered, release, ran))
    # WHEN it settles
    handle = runtime.start("wf")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN no lease was written or read (the cost of a fast step is unchanged)
    assert runtime.leases.renewals == 0
    assert harness.spy.calls("steps.renew_lease") == [] and harness.spy.calls("steps.lease") == []


def _owner_tag(harness: Harness, run_id: str) -> str:
    (created,) = [e for e in harness.events(run_id) if e.type is EventType.STEP_CREATED]
    owner = getattr(created.data, "owner", None)
    assert isinstance(owner, str)
    return owner
