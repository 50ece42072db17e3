"""A schedule's tick is started once: a start whose first message failed, a previous tick's chain."""

from __future__ import annotations

from tests.runtime.harness import Harness
from tests.runtime.spy import Call, Publish
from tests.runtime.test_schedules import at_start, report_app, scheduled_runs
from world_aws.contract.records import ResolveData, RunStatus
from world_aws.contract.world import QueueName
from world_aws.errors import Transient
from world_aws.worker.scheduler import Scheduler, TickOutcome


def first_message(call: Call) -> bool:
    detail = call.detail
    return (
        isinstance(detail, Publish)
        and detail.queue is QueueName.WORKFLOW
        and detail.payload.run_input is not None
    )


def test_a_tick_whose_first_message_failed_is_started_by_the_next_pass(harness: Harness) -> None:
    calls: list[str] = []
    scheduler = Scheduler(harness.runtime_for(report_app(calls), world=harness.spy))
    at_start(harness)
    scheduler.tick()
    harness.clock.advance(5 * 60)
    # GIVEN a pass whose start of the 10:05 run wrote run_created but failed to send its
    # first message (the start raised: the pass left the state, to be redone)
    harness.spy.inject("queue.publish", Transient("SQS unavailable"), match=first_message)
    failed = scheduler.tick()
    assert failed.failed == ["sched.report"]
    (run_id,) = scheduled_runs(harness)
    # WHEN the next pass (a minute later) handles the same tick
    harness.clock.advance(60)
    (again,) = scheduler.tick().ticks
    assert again.outcome is TickOutcome.ALREADY_STARTED
    # THEN the run gets going (the pass must make sure its first message is out)
    harness.drain()
    status = harness.world.runs.get(run_id, resolve_data=ResolveData.NONE).status
    assert status is not RunStatus.PENDING


def test_overlap_skip_sees_a_previous_run_that_continued_as_new(harness: Harness) -> None:
    from world_aws import Workflows, continue_as_new, create_hook

    app = Workflows()

    @app.workflow(name="rv.sched_loop")
    async def loop(n: int) -> str:
        if n < 1:
            continue_as_new(n + 1)  # a long-lived scheduled job keeps its log bounded
        value: str = await create_hook()
        return value

    app.schedule(loop, "rate(5 minutes)", name="rv.loop", overlap="skip", args=(0,))
    scheduler = Scheduler(harness.runtime_for(app))
    at_start(harness)
    scheduler.tick()
    harness.clock.advance(5 * 60)
    (first,) = scheduler.tick().ticks
    assert first.outcome is TickOutcome.STARTED
    harness.drain()
    # GIVEN the first tick's run continued as new: its chain is still going (waiting on a hook)
    assert harness.status(first.run_id) is RunStatus.COMPLETED
    # WHEN the next tick is due
    harness.clock.advance(5 * 60)
    (second,) = scheduler.tick().ticks
    # THEN it is skipped, as the previous tick's job is still running
    assert second.outcome is TickOutcome.SKIPPED
