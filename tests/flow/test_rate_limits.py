"""Issue 41 item 2: ``RateLimit("20/s")`` on a step: never more than 20 starts in any second, waiting durably.

On the memory World with a manual clock: a refused attempt's message is acked and a
copy comes back when the next token is due, so the pump's clock jumps to it; nothing
sleeps. The wall-clock figure (200 calls within 15 s) is ``python -m bench.flow``'s.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from harness.harness import memory_harness
from world_aws import RateLimit, Workflows
from world_aws.contract.records import RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Ack, Delivery, QueueName, Redeliver
from world_aws.testing.flow_checks import attempts, max_starts_in_window

CALLS = 200


def rated_app() -> Workflows:
    app = Workflows()

    @app.step(name="ask_llm", rate_limit=RateLimit("20/s"))
    def ask_llm(i: int) -> int:
        return i

    @app.workflow
    async def fan(n: int) -> list[int]:
        return list(await asyncio.gather(*(ask_llm(i) for i in range(n))))

    return app


def test_two_hundred_calls_at_twenty_a_second_never_start_more_than_twenty_in_a_second() -> None:
    with memory_harness() as harness:
        # GIVEN a step limited to 20 starts a second, called 200 times at once
        runtime = harness.runtime_for(rated_app())
        began = harness.clock.now()
        handle = runtime.start("fan", CALLS)
        # WHEN the run settles on the manual clock
        assert harness.settle(handle, max_rounds=2000) is RunStatus.COMPLETED
        # THEN every call returned
        assert handle.result(timeout=0) == list(range(CALLS))
        # AND no window of one second saw more than 20 starts
        found = attempts(harness.world, [handle.run_id], "ask_llm")
        assert len(found) == CALLS
        assert max_starts_in_window(found, timedelta(seconds=1)) == 20
        # AND the calls were spread over at least the 9 seconds 200 starts at 20/s need
        spread = max(a.start for a in found) - min(a.start for a in found)
        assert spread >= timedelta(seconds=9)
        assert max(a.start for a in found) >= began + timedelta(seconds=9)


def test_a_rate_limited_step_is_never_run_inline() -> None:
    with memory_harness() as harness:
        # GIVEN inline execution on (the default) and a rate-limited step
        runtime = harness.runtime_for(rated_app())
        handle = runtime.start("fan", 3)
        assert harness.settle(handle) is RunStatus.COMPLETED
        # THEN each call went by step message (the consumer admits it), none ran in the workflow's delivery
        assert sorted(d.step_id for d in harness.step_deliveries() if d.step_id) == sorted(
            a.step_id for a in attempts(harness.world, [handle.run_id], "ask_llm")
        )


def one_per_second_app() -> Workflows:
    app = Workflows()

    @app.step(name="ask", rate_limit=RateLimit("1/s"))
    def ask(i: int) -> int:
        return i

    @app.workflow
    async def pair() -> list[int]:
        return list(await asyncio.gather(ask(1), ask(2)))

    return app


def test_a_copy_delivered_before_its_token_is_due_is_redelivered_not_lost() -> None:
    with memory_harness() as harness:
        # GIVEN two calls of a 1/s step: one ran, the other's copy is queued for its token
        runtime = harness.runtime_for(one_per_second_app())
        handle = runtime.start("pair")
        harness.drain()
        [copy] = harness.pending_messages(QueueName.STEP)
        assert copy.due > harness.clock.now()
        # WHEN that copy is delivered before its due (a consumer whose clock runs behind)
        early = Delivery(QueueName.STEP, copy.message_id, copy.attempt, copy.body)
        result = runtime.handle(early)
        # THEN it is redelivered at its token's time, not acked (a second copy under its own key is a no-op)
        assert isinstance(result, Redeliver)
        assert result.seconds >= 1.0
        # AND the run still completes
        assert harness.settle(handle) is RunStatus.COMPLETED
        assert handle.result(timeout=0) == [1, 2]


def test_redeliveries_of_a_refused_copy_publish_no_second_copy() -> None:
    with memory_harness() as harness:
        # GIVEN a 1/s step's second call, refused and its copy queued for its token
        runtime = harness.runtime_for(one_per_second_app())
        handle = runtime.start("pair")
        harness.drain()
        [copy] = harness.pending_messages(QueueName.STEP)
        step_id = decode_payload(copy.body).step_id
        [refused] = [d for d in harness.step_deliveries() if d.step_id == step_id]
        # WHEN the refused delivery comes again three times (its delete was dropped each time)
        for attempt in (2, 3, 4):
            again = Delivery(QueueName.STEP, refused.message_id, attempt, copy.body)
            assert isinstance(runtime.handle(again), Ack)
        # THEN the queue still holds the one copy, and the run completes
        assert [m.message_id for m in harness.pending_messages(QueueName.STEP)] == [copy.message_id]
        assert harness.settle(handle) is RunStatus.COMPLETED
