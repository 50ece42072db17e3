"""Issue 5: durable sleep, hooks and cancellation (contract §6.2, §8.5).

Sleeps wake by a delayed workflow message, so they run on ``memory_harness``
(moto delays SQS messages in wall-clock time). Hooks wake at once and run on
every World.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from harness.harness import Harness
from harness.spy import Call
from world_aws import NotFound, RunCancelledError, Workflows, create_hook, sleep
from world_aws.client.handle import RunHandle
from world_aws.contract.records import EventRequest, EventType, HookReceivedData, RunStatus, WaitCreatedData
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, QueueName

DAY = 86_400.0


def reminder_app(sent: list[str]) -> Workflows:
    app = Workflows()

    @app.step
    def notify(user: str) -> str:
        sent.append(user)
        return f"reminded {user}"

    @app.workflow
    async def remind(user: str, delay: str) -> str:
        await sleep(delay)
        return await notify(user)

    return app


def test_three_day_sleep_runs_on_the_injected_clock(memory_harness: Harness) -> None:
    # GIVEN a workflow that sleeps 3 days before its step
    h = memory_harness
    sent: list[str] = []
    runtime = h.runtime_for(reminder_app(sent))
    started = h.clock.now()
    handle = runtime.start("remind", "ada", "3d")
    h.drain()
    # WHEN 2 days pass
    h.advance(2 * DAY)
    h.drain()
    # THEN the run is still asleep, its wake-up still queued for day 3
    assert handle.status() is RunStatus.RUNNING
    assert sent == []
    assert EventType.WAIT_COMPLETED not in h.event_types(handle.run_id)
    [wake] = h.pending_messages(QueueName.WORKFLOW)
    assert wake.due == started + timedelta(days=3)
    # WHEN the third day passes
    h.advance(DAY)
    h.drain()
    # THEN it woke, ran its step and completed
    assert handle.status() is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "reminded ada"
    events = h.events(handle.run_id)
    created = next(e for e in events if e.type is EventType.WAIT_CREATED)
    completed = next(e for e in events if e.type is EventType.WAIT_COMPLETED)
    assert created.data_as(WaitCreatedData).resume_at == started + timedelta(days=3)
    assert completed.created_at - created.created_at == timedelta(days=3)


def test_cancelled_sleeping_run_ignores_its_wake_up(memory_harness: Harness) -> None:
    # GIVEN a run asleep for an hour
    h = memory_harness
    sent: list[str] = []
    runtime = h.runtime_for(reminder_app(sent))
    handle = runtime.start("remind", "bob", "1h")
    h.drain()
    assert handle.status() is RunStatus.RUNNING
    # WHEN it is cancelled, and its wake-up is delivered an hour later
    assert handle.cancel() is True
    cancelled_log = h.event_types(handle.run_id)
    h.advance(3600)
    delivered = h.drain()
    # THEN the wake-up was acked without doing anything: no step ran, the log did not grow
    assert delivered == 1
    assert sent == []
    assert h.event_types(handle.run_id) == cancelled_log
    assert cancelled_log[-1] is EventType.RUN_CANCELLED
    assert h.pending_messages(QueueName.WORKFLOW) == []
    # AND the run reads as cancelled; its result raises; a second cancel is refused
    assert handle.status() is RunStatus.CANCELLED
    with pytest.raises(RunCancelledError):
        handle.result(timeout=0)
    assert handle.cancel() is False


def approvals_app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def approvals(doc: str) -> list[str]:
        hook = create_hook(token=f"approve:{doc}")
        received: list[str] = []
        async for payload in hook:
            received.append(payload)
            if len(received) == 3:
                break
        return received

    return app


def test_hook_resumed_three_times_delivers_each_payload_once_in_order(harness: Harness) -> None:
    # GIVEN a run waiting on a hook for three payloads
    runtime = harness.runtime_for(approvals_app())
    handle = runtime.start("approvals", "doc-1")
    assert harness.settle(handle) is RunStatus.RUNNING
    token = "approve:doc-1"
    hook = harness.world.hooks.get_by_token(token)
    # WHEN it is resumed three times, each resume retried once with the same resume id
    for n, payload in enumerate(["legal", "finance", "ceo"]):
        resume_id = runtime.resume_hook(token, payload)
        retried = harness.world.events.create(
            handle.run_id,
            EventRequest(
                EventType.HOOK_RECEIVED,
                hook.hook_id,
                HookReceivedData(
                    token=token, payload=runtime.app.serializer.dumps(payload), resume_id=resume_id
                ),
            ),
        )
        # THEN each retry returned the first event instead of appending a new one
        assert retried.event is not None and retried.event.data_as(HookReceivedData).resume_id == resume_id
        if n == 0:
            harness.settle(handle)  # the run consumes the first payload before the others arrive
    # AND the run completes with the three payloads in resume order, one event each
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == ["legal", "finance", "ceo"]
    received = [e for e in harness.events(handle.run_id) if e.type is EventType.HOOK_RECEIVED]
    assert len(received) == 3
    assert len({e.data_as(HookReceivedData).resume_id for e in received}) == 3
    # AND once the run ended its token is free: a late resume is NotFound
    with pytest.raises(NotFound):
        runtime.resume_hook(token, "late")


def test_a_resume_that_loses_the_race_with_its_runs_end_is_not_found(harness: Harness) -> None:
    # GIVEN a run waiting on its hook, and a caller whose resume finds the hook live but
    # whose payload is written only after the run was cancelled
    runtime = harness.runtime_for(approvals_app())
    handle = runtime.start("approvals", "doc-9")
    assert harness.settle(handle) is RunStatus.RUNNING
    elsewhere = RunHandle(harness.world, runtime.app.serializer, handle.run_id)

    def cancel_first(call: Call) -> bool:
        if getattr(call.detail, "type", None) is EventType.HOOK_RECEIVED:
            elsewhere.cancel("by an operator")
        return False

    harness.spy.inject("events.create", RuntimeError("unused"), match=cancel_first)
    # WHEN the caller resumes it
    # THEN it is told what a resume after the end is told: no live hook holds the token
    # (NotFound, a 404; not RunExpired, a 410 the API does not document), and nothing landed
    with pytest.raises(NotFound, match="approve:doc-9"):
        runtime.resume_hook("approve:doc-9", "legal")
    assert harness.status(handle.run_id) is RunStatus.CANCELLED
    assert EventType.HOOK_RECEIVED not in harness.event_types(handle.run_id)


def test_resume_of_an_unknown_token_is_not_found_and_writes_nothing(harness: Harness) -> None:
    # GIVEN a runtime with no hook holding the token
    runtime = harness.runtime_for(approvals_app())
    # WHEN a client resumes it
    with pytest.raises(NotFound):
        runtime.resume_hook("approve:nobody", {"ok": True})
    # THEN nothing was written or published
    assert harness.spy.calls("events.create") == []
    assert harness.spy.calls("queue.publish") == []


# Seconds the consumer's clock is behind the producer's: a little (the remainder gets a key of
# its moment), and seconds to minutes (SigV4 allows 5): the wake-up's own pass re-keys the rest.
@pytest.mark.parametrize("skew", [0.005, 5.0, 240.0])
def test_wake_up_that_arrives_early_still_wakes_the_run(memory_harness: Harness, skew: float) -> None:
    # GIVEN a run asleep for an hour
    h = memory_harness
    sent: list[str] = []
    runtime = h.runtime_for(reminder_app(sent))
    handle = runtime.start("remind", "eve", "1h")
    h.drain()
    # WHEN its wake-up is handled by a consumer whose clock runs behind the producer's (once:
    # the memory queue shares that clock, so a skew on every delivery would also delay the
    # rest's message by it, which SQS, on its own clock, does not)
    h.advance(3600)
    skews = [skew]

    def skewed(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
        behind = skews.pop() if skews else 0.0
        h.clock.advance(-behind)
        try:
            return handle_message(delivery)
        finally:
            h.clock.advance(behind)

    h.drain(intercept=skewed)
    # THEN the early wake-up queued another one for the rest, and the run completes
    assert h.settle(handle) is RunStatus.COMPLETED
    assert sent == ["eve"]
