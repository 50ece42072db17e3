"""A throttling storm longer than a minute delays a run; it never uses up its deliveries and fails it.

A step message's delivery that cannot claim its step (throttled) or continue its run
after its outcome is redelivered. Each delivery counts toward the cap
(``WORKFLOW_MAX_QUEUE_DELIVERIES``, 48), past which the run fails: redelivered every
second, a DynamoDB throttling storm of a minute or two (an on-demand table meeting a
burst past twice its previous peak) failed the run. Redeliveries back off instead, as
a failed workflow delivery waits out the queue's visibility timeout. Memory World: the
redeliveries are timed by the manual clock (moto's queue delays follow the wall clock).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.harness import Harness
from harness.harness import memory_harness as fresh_memory_harness
from harness.spy import Call
from tests.runtime.test_dispatch_fanout import pair_app
from world_aws import RuntimeConfig
from world_aws.contract.records import EventType, RunStatus
from world_aws.errors import Throttled

STORM_SECONDS = 600.0


def _during_the_storm(harness: Harness, kind: EventType | None = None) -> object:
    ends = harness.clock.now() + timedelta(seconds=STORM_SECONDS)

    def match(call: Call) -> bool:
        in_storm = harness.clock.now() < ends
        return in_storm and (kind is None or getattr(call.detail, "type", None) is kind)

    return match


def test_a_step_claim_throttled_for_ten_minutes_is_retried_until_it_lands(memory_harness: Harness) -> None:
    # GIVEN every step claim (step_started) throttled for ten minutes, inline execution off
    h = memory_harness
    runtime = h.runtime_for(pair_app(), RuntimeConfig(max_inline_steps=0))
    throttled = Throttled("DynamoDB throttled", retry_after=0.2)
    h.spy.inject("events.create", throttled, match=_during_the_storm(h, EventType.STEP_STARTED), times=10**6)
    # WHEN a run of a 2-way fan-out settles
    handle = runtime.start("pair")
    assert h.settle(handle, max_rounds=2_000) is RunStatus.COMPLETED
    # THEN it completed after the storm, each step message well under the delivery cap
    assert handle.result(timeout=0) == 3
    attempts = [d.attempt for d in h.step_deliveries()]
    assert max(attempts) < RuntimeConfig().max_queue_deliveries // 2


def test_a_continuation_throttled_for_ten_minutes_after_its_step_is_retried_until_it_lands() -> None:
    # GIVEN one inline step and a 2-way fan-out: the dispatched branch's consumer, the last
    # completer, continues the run inline after its outcome, and the log reads are throttled
    # for ten minutes from its claim of the continuation on (a delivery that raises waits
    # out the template's 900 s visibility timeout, as on AWS)
    with fresh_memory_harness(visibility_timeout_seconds=900) as h:
        runtime = h.runtime_for(pair_app(), RuntimeConfig(max_inline_steps=1, inline_fast_seconds=0))
        storm_ends: list[datetime] = []

        def claims(call: Call) -> bool:
            if not storm_ends:
                storm_ends.append(h.clock.now() + timedelta(seconds=STORM_SECONDS))
            return False  # the claim itself goes through

        def in_the_storm(call: Call) -> bool:
            return bool(storm_ends) and h.clock.now() < storm_ends[0]

        h.spy.inject("runs.claim_continuation", RuntimeError("unused"), match=claims)
        throttled = Throttled("DynamoDB throttled", retry_after=0.2)
        h.spy.inject("events.list", throttled, match=in_the_storm, times=10**6)
        # WHEN the run settles
        handle = runtime.start("pair")
        assert h.settle(handle, max_rounds=2_000) is RunStatus.COMPLETED
        # THEN it completed after the storm; no message came near the delivery cap
        assert storm_ends and handle.result(timeout=0) == 3
        attempts = [d.attempt for d in h.deliveries]
        assert max(attempts) < RuntimeConfig().max_queue_deliveries // 2
