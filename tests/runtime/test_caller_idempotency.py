"""Issue 11: a caller's retry of ``resume_hook`` or ``start`` is safe (mechanism 4, start keys).

``resume_hook(token, payload, resume_id=...)``: a retry after an error appends the
payload once and still wakes the run; the wake-up after a committed
``hook_received`` is retried in process before the caller sees an error.
``start(..., idempotency_key=...)``: the same workflow and arguments give the same
run; another workflow or other arguments under the key are a Conflict naming both.
"""

from __future__ import annotations

import pytest

from world_aws import Workflows, create_hook
from world_aws.contract.records import EventType, HookReceivedData, RunStatus
from world_aws.contract.world import QueueName
from world_aws.errors import BadInput, Conflict, NotFound, Transient

from .harness import Harness
from .inline_support import chain_app
from .spy import Call, Publish


def collector_app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def collect(doc: str) -> list[str]:
        hook = create_hook(token=f"sign:{doc}")
        received: list[str] = []
        async for payload in hook:
            received.append(payload)
            if len(received) == 2:
                break
        return received

    return app


def wakes(call: Call) -> bool:
    return isinstance(call.detail, Publish) and call.detail.queue is QueueName.WORKFLOW


def received_payloads(harness: Harness, run_id: str) -> list[bytes | None]:
    return [
        e.data_as(HookReceivedData).payload
        for e in harness.events(run_id)
        if e.type is EventType.HOOK_RECEIVED
    ]


def test_a_resume_retried_after_its_wake_up_failed_delivers_once_and_wakes_the_run(
    harness: Harness,
) -> None:
    # GIVEN a run waiting on its hook, and a wake-up publish that fails on every in-process try
    runtime = harness.runtime_for(collector_app())
    handle = runtime.start("collect", "d1")
    assert harness.settle(handle) is RunStatus.RUNNING
    harness.spy.inject("queue.publish", Transient("SQS 500"), match=wakes, times=3)
    # WHEN the caller resumes, gets the error, and retries with the same resume id
    with pytest.raises(Transient):
        runtime.resume_hook("sign:d1", "alice", resume_id="req-1")
    assert runtime.resume_hook("sign:d1", "alice", resume_id="req-1") == "req-1"
    runtime.resume_hook("sign:d1", "bob", resume_id="req-2")
    # THEN the payload was appended once, the run woke and completed with both payloads
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["alice", "bob"]
    assert len(received_payloads(harness, handle.run_id)) == 2


def test_a_wake_up_that_fails_once_is_retried_in_process(harness: Harness) -> None:
    # GIVEN a run waiting on its hook, and a wake-up publish that fails once
    runtime = harness.runtime_for(collector_app())
    handle = runtime.start("collect", "d2")
    assert harness.settle(handle) is RunStatus.RUNNING
    harness.spy.inject("queue.publish", Transient("SQS 500"), match=wakes, times=1)
    # WHEN the caller resumes twice, without retrying anything itself
    runtime.resume_hook("sign:d2", "alice")
    runtime.resume_hook("sign:d2", "bob")
    # THEN the run woke and completed
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["alice", "bob"]


def test_a_resume_whose_answer_was_lost_is_not_delivered_twice(harness: Harness) -> None:
    # GIVEN a run waiting on its hook, and a hook_received that lands while its answer is lost
    runtime = harness.runtime_for(collector_app())
    handle = runtime.start("collect", "d3")
    assert harness.settle(handle) is RunStatus.RUNNING

    def receives(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.HOOK_RECEIVED

    harness.spy.inject("events.create", Transient("timed out"), match=receives, after=True)
    # WHEN the caller retries with its resume id
    with pytest.raises(Transient):
        runtime.resume_hook("sign:d3", "alice", resume_id="req-9")
    runtime.resume_hook("sign:d3", "alice", resume_id="req-9")
    runtime.resume_hook("sign:d3", "carol", resume_id="req-10")
    # THEN the run got each payload once
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["alice", "carol"]


def approval_app() -> Workflows:
    app = Workflows()

    @app.workflow(name="ci.approve")
    async def approve(order: str) -> str:
        decision: str = await create_hook(token=f"ok:{order}")
        return f"{order}:{decision}"

    return app


def test_a_resume_retried_after_its_run_used_the_payload_and_ended_is_still_a_success(
    harness: Harness,
) -> None:
    # GIVEN a run waiting on one payload, and a resume whose hook_received lands while its
    # answer is lost (a timeout)
    runtime = harness.runtime_for(approval_app())
    handle = runtime.start("ci.approve", "o-1")
    assert harness.settle(handle) is RunStatus.RUNNING

    def receives(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.HOOK_RECEIVED

    harness.spy.inject("events.create", Transient("timed out"), match=receives, after=True)
    with pytest.raises(Transient):
        runtime.resume_hook("ok:o-1", "yes", resume_id="req-1")
    # AND the run, woken by the reconciler or any message, uses the payload and completes
    runtime.orchestrator.wake(handle.run_id, delay_seconds=0, key=None)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # WHEN the caller retries with the same resume id, as it was told to
    # THEN the retry is answered as the first resume was recorded: a success, the payload once
    # (it was NotFound until session 37: the caller was told its payload reached no hook)
    assert runtime.resume_hook("ok:o-1", "yes", resume_id="req-1") == "req-1"
    assert received_payloads(harness, handle.run_id) == [runtime.app.serializer.dumps("yes")]


def rounds_app() -> Workflows:
    """One token, a fresh hook per round (the first disposed before the second is made)."""
    app = Workflows()

    @app.workflow(name="review.rounds")
    async def rounds(order: str) -> list[str]:
        decisions: list[str] = []
        for _ in range(2):
            hook = create_hook(token=f"round:{order}")
            decisions.append(await hook)
            hook.dispose()
        return decisions

    return app


def test_a_retried_resume_of_an_earlier_hook_of_the_same_token_and_run_stays_a_success(
    harness: Harness,
) -> None:
    # GIVEN a run that takes one payload per round on one token, a hook per round
    runtime = harness.runtime_for(rounds_app())
    handle = runtime.start("review.rounds", "o-1")
    assert harness.settle(handle) is RunStatus.RUNNING
    # AND round 1's resume req-1 was recorded (its answer lost, say), then round 2's hook took the token
    runtime.resume_hook("round:o-1", "first", resume_id="req-1")
    assert harness.settle(handle) is RunStatus.RUNNING
    # WHILE the run goes on, the retry of req-1 is a success (contract §6.2: deduplicated on the run)
    assert runtime.resume_hook("round:o-1", "first", resume_id="req-1") == "req-1"
    # WHEN round 2 gets its payload and the run ends
    runtime.resume_hook("round:o-1", "second", resume_id="req-2")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["first", "second"]
    # THEN the retry of req-1 is still the success it was a moment ago, payload once
    # (a review found it NotFound: hooks.resumed took only the last holder's own resumes)
    assert runtime.resume_hook("round:o-1", "first", resume_id="req-1") == "req-1"
    assert len(received_payloads(harness, handle.run_id)) == 2


def test_a_resume_that_was_never_recorded_is_not_found_once_the_run_ended(harness: Harness) -> None:
    # GIVEN a run that used one payload (resume id req-1) and completed
    runtime = harness.runtime_for(approval_app())
    handle = runtime.start("ci.approve", "o-2")
    assert harness.settle(handle) is RunStatus.RUNNING
    runtime.resume_hook("ok:o-2", "yes", resume_id="req-1")
    assert harness.settle(handle) is RunStatus.COMPLETED
    # WHEN another resume comes by the token, with an id never recorded or none
    # THEN it is told no hook holds the token, and nothing is appended
    with pytest.raises(NotFound, match="ok:o-2"):
        runtime.resume_hook("ok:o-2", "no", resume_id="req-2")
    with pytest.raises(NotFound):
        runtime.resume_hook("ok:o-2", "no")
    assert received_payloads(harness, handle.run_id) == [runtime.app.serializer.dumps("yes")]
    # AND the retry of req-1 is still the success it was
    assert runtime.resume_hook("ok:o-2", "yes", resume_id="req-1") == "req-1"


@pytest.mark.parametrize("resume_id", ["", "has space", "x" * 201, "tab\there"])
def test_an_unusable_resume_id_is_refused_before_anything_is_written(
    memory_harness: Harness, resume_id: str
) -> None:
    runtime = memory_harness.runtime_for(collector_app())
    handle = runtime.start("collect", "d4")
    memory_harness.settle(handle)
    with pytest.raises(BadInput, match="resume_id"):
        runtime.resume_hook("sign:d4", "x", resume_id=resume_id)
    assert received_payloads(memory_harness, handle.run_id) == []


def billing_app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def charge(order: str, cents: int) -> str:
        return f"charged {order} {cents}"

    @app.workflow
    async def refund(order: str, cents: int) -> str:
        return f"refunded {order} {cents}"

    return app


def test_start_with_a_key_of_another_workflow_is_a_conflict_naming_both(harness: Harness) -> None:
    # GIVEN a run of charge started under the key order-1
    app = billing_app()
    runtime = harness.runtime_for(app)
    first = runtime.start("charge", "o-1", 500, idempotency_key="order-1")
    # WHEN refund is started under the same key
    with pytest.raises(Conflict) as conflict:
        runtime.start("refund", "o-1", 500, idempotency_key="order-1")
    # THEN the error names the key, the run and both workflows, and the charge run is untouched
    message = str(conflict.value)
    assert "order-1" in message and first.run_id in message
    assert "'charge'" in message and "'refund'" in message
    assert harness.settle(first) is RunStatus.COMPLETED
    assert first.result(timeout=0) == "charged o-1 500"


def test_start_with_a_key_and_other_arguments_is_a_conflict(harness: Harness) -> None:
    app = billing_app()
    runtime = harness.runtime_for(app)
    runtime.start("charge", "o-2", 500, idempotency_key="order-2")
    with pytest.raises(Conflict, match="other arguments"):
        runtime.start("charge", "o-2", 900, idempotency_key="order-2")


def test_start_with_a_key_and_the_same_call_returns_the_same_run(harness: Harness) -> None:
    app = billing_app()
    runtime = harness.runtime_for(app)
    first = runtime.start("charge", order="o-3", cents=5, idempotency_key="order-3")
    # keyword order does not make it another start
    again = runtime.start("charge", cents=5, order="o-3", idempotency_key="order-3")
    assert again.run_id == first.run_id
    assert harness.settle(first) is RunStatus.COMPLETED


def test_a_start_without_a_key_sends_its_first_message_unkeyed_and_a_copy_of_it_is_harmless(
    harness: Harness,
) -> None:
    # GIVEN a 3-step chain started without an idempotency key, and one started with a key
    ran: list[str] = []
    runtime = harness.runtime_for(chain_app(ran))
    unkeyed = runtime.start("chain", 3)
    keyed = runtime.start("chain", 3, idempotency_key="chain-1")
    firsts = {c.detail.payload.run_id: c.detail for c in harness.spy.calls("queue.publish") if wakes(c)}
    # THEN only the keyed start's first message carries a key (a start without one names a
    # new run each time: nothing would repeat its publish, and the key costs a claim)
    assert firsts[unkeyed.run_id].idempotency_key is None
    assert firsts[keyed.run_id].idempotency_key == f"{keyed.run_id}:start"
    # WHEN the unkeyed start's first message is there twice (a duplicate send) and all settle
    harness.world.queue.publish(QueueName.WORKFLOW, firsts[unkeyed.run_id].body)
    assert harness.settle(unkeyed) is RunStatus.COMPLETED
    assert harness.settle(keyed) is RunStatus.COMPLETED
    # THEN both completed once, each with one start, and every body ran once
    for handle in (unkeyed, keyed):
        assert handle.result(timeout=0) == 3
        types = harness.event_types(handle.run_id)
        assert types.count(EventType.RUN_STARTED) == 1 and types.count(EventType.RUN_COMPLETED) == 1
    assert sorted(ran) == sorted(["add 0+0", "add 0+1", "add 1+2"] * 2)
