"""Conformance: ``events.append_after``, the single writer's batch of owned step writes.

All or none, at ``after + 1`` on, iff the log ends at ``after``: an owned step's
outcome and the next owned steps' creates land together, judged by the same rules
as one-by-one writes, or nothing lands (None) and the caller writes them singly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from functools import partial

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventData,
    EventRequest,
    EventType,
    ResolveData,
    RunCancelledData,
    RunCompletedData,
    RunFailedData,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    owner_of,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, NotFound, RunExpired
from world_aws.testing.conformance.support import (
    STEP,
    create_hook,
    create_run,
    create_step,
    end_run,
    new_id,
    start_step,
    write,
)

OWNER = "msg-9#1#h"


def owned_create(step_id: str, owner: str = OWNER) -> EventRequest:
    return EventRequest(
        EventType.STEP_CREATED, step_id, StepCreatedData(step_name=STEP, input=b"in", owner=owner)
    )


def owned_outcome(step_id: str, output: bytes = b"out") -> EventRequest:
    return EventRequest(EventType.STEP_COMPLETED, step_id, StepCompletedData(output=output, owner=OWNER))


def last_position(world: World, run_id: str) -> int:
    return world.events.list(run_id)[-1].position


def running_owned(world: World, run_id: str) -> str:
    step_id = new_id("step")
    world.events.create(run_id, owned_create(step_id))
    return step_id


def test_an_outcome_and_the_next_creates_land_together_at_the_positions_after(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a run whose log ends with an owned step running
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    clock.advance(1)
    at = clock.now()
    nexts = [new_id("step"), new_id("step")]
    # WHEN its outcome and two owned creates are appended after that position
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), *(owned_create(s) for s in nexts)], at=at
    )
    # THEN they hold the next three positions, stamped at, and the log lists exactly them
    assert results is not None
    assert [r.event.position for r in results if r.event] == [after + 1, after + 2, after + 3]
    listed = world.events.list(run_id, after=after)
    assert [(e.type, e.correlation_id, e.created_at) for e in listed] == [
        (EventType.STEP_COMPLETED, done, at),
        (EventType.STEP_CREATED, nexts[0], at),
        (EventType.STEP_CREATED, nexts[1], at),
    ]
    assert [e for r in results if (e := r.event)] == listed
    # AND the entities are as if written one by one: done completed, the new ones running owned
    finished = world.steps.get(run_id, done)
    assert (finished.status, finished.output) == (StepStatus.COMPLETED, b"out")
    for step_id, result in zip(nexts, results[1:], strict=True):
        step = world.steps.get(run_id, step_id)
        assert (step.status, step.attempt, step.input) == (StepStatus.RUNNING, 1, b"in")
        assert result.step is not None and result.step.step_id == step_id
    assert world.steps.any_pending(run_id) is False


def test_each_appended_event_keeps_the_owner_it_was_written_with(world: World, clock: ManualClock) -> None:
    # GIVEN a run whose log ends with an owned step running
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    # WHEN its outcome is appended with three owned creates, two owned like it and one by an
    # empty owner between them (a World may keep the owner most of a batch's events share once)
    nexts = [new_id("step"), new_id("step"), new_id("step")]
    owners = [OWNER, "", OWNER]
    creates = [owned_create(step_id, owner) for step_id, owner in zip(nexts, owners, strict=True)]
    assert world.events.append_after(run_id, after, [owned_outcome(done), *creates], at=clock.now())
    # THEN the log names each event's own owner, the empty one too, in every read of it
    assert [owner_of(e.data) for e in world.events.list(run_id, after=after)] == [OWNER, *owners]
    created = world.events.list(run_id, after=after + 1, resolve_data=ResolveData.NONE)
    assert [owner_of(e.data) for e in created] == owners


def test_an_append_to_flush_later_is_committed_when_it_answers_and_goes_on_after_its_flush(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a run whose log ends with an owned step running
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    nxt, third = new_id("step"), new_id("step")
    # WHEN its outcome and the next create are appended to flush later
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(nxt)], at=clock.now(), flush_later=True
    )
    # THEN before any flush the log and the steps read as committed
    assert results is not None
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == [done, nxt]
    assert world.steps.get(run_id, nxt).status is StepStatus.RUNNING
    # AND after the flush (twice: the second has nothing to do) the writer appends on
    world.events.flush(run_id)
    world.events.flush(run_id)
    assert world.events.append_after(
        run_id, after + 2, [owned_outcome(nxt), owned_create(third)], at=clock.now(), flush_later=True
    )
    # AND an append that is not flushed is committed too: the next one goes on after it
    assert world.events.append_after(run_id, after + 4, [owned_outcome(third)], at=clock.now())
    listed = [e.correlation_id for e in world.events.list(run_id, after=after)]
    assert listed == [done, nxt, nxt, third, third]
    # AND a flush of a run with nothing left, or of no run at all, does nothing
    world.events.flush(run_id)
    world.events.flush(new_id("wrun"))


def test_a_read_from_inside_an_appended_batch_lists_only_what_follows(
    world: World, clock: ManualClock
) -> None:
    # GIVEN an outcome and three creates appended together, then a one-by-one write after them
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    nexts = [new_id("step") for _ in range(3)]
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), *(owned_create(s) for s in nexts)], at=clock.now()
    )
    assert results is not None
    tail = write(
        world, run_id, EventType.STEP_COMPLETED, nexts[0], StepCompletedData(output=b"x", owner=OWNER)
    )
    assert tail.event is not None
    everything = world.events.list(run_id)
    # WHEN the log is read after each position the batch covers
    for offset in range(1, 5):
        listed = world.events.list(run_id, after=after + offset)
        # THEN it lists exactly the events after that position, as the whole log has them
        assert listed == [e for e in everything if e.position > after + offset]
    assert world.events.list(run_id, after=after)[-1] == tail.event


def test_nothing_lands_when_the_log_has_moved_past_after(world: World) -> None:
    # GIVEN a running owned step, and another event written after the position the writer knew
    run_id = create_run(world)
    done = running_owned(world, run_id)
    after = last_position(world, run_id)
    other = running_owned(world, run_id)
    # WHEN the batch is appended after the stale position
    nxt = new_id("step")
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(nxt)], at=world.clock.now()
    )
    # THEN nothing was written: the step still runs, the next one does not exist
    assert results is None
    assert last_position(world, run_id) == after + 1
    assert world.steps.get(run_id, done).status is StepStatus.RUNNING
    assert other in {s.step_id for s in world.steps.list(run_id)}
    assert nxt not in {s.step_id for s in world.steps.list(run_id)}


def test_nothing_lands_when_a_rule_refuses_one_request(world: World) -> None:
    # GIVEN an owned step that already completed
    run_id = create_run(world)
    done = running_owned(world, run_id)
    write(world, run_id, EventType.STEP_COMPLETED, done, StepCompletedData(output=b"first", owner=OWNER))
    after = last_position(world, run_id)
    # WHEN a batch repeats its outcome beside a create
    nxt = new_id("step")
    results = world.events.append_after(
        run_id, after, [owned_outcome(done, b"second"), owned_create(nxt)], at=world.clock.now()
    )
    # THEN nothing of it landed (not even the create), and the first outcome stands
    assert results is None
    assert last_position(world, run_id) == after
    assert world.steps.get(run_id, done).output == b"first"
    assert nxt not in {s.step_id for s in world.steps.list(run_id)}


def test_a_batch_with_a_create_is_fenced_by_a_terminal_run(world: World) -> None:
    # GIVEN a run that ended while its owned step ran
    run_id = create_run(world)
    done = running_owned(world, run_id)
    end_run(world, run_id)
    after = last_position(world, run_id)
    # WHEN a batch with a create is appended after the terminal event
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), owned_create(new_id("step"))], at=world.clock.now()
    )
    # THEN it is refused whole (the outcome alone may still be written one by one)
    assert results is None
    assert world.events.list(run_id)[-1].type is EventType.RUN_COMPLETED
    write(world, run_id, EventType.STEP_COMPLETED, done, StepCompletedData(output=b"late", owner=OWNER))


def test_a_missing_run_appends_nothing(world: World) -> None:
    results = world.events.append_after(
        new_id("wrun"), 2, [owned_create(new_id("step"))], at=world.clock.now()
    )
    assert results is None


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([], "1 to"),
        ([EventRequest(EventType.STEP_COMPLETED, "s1", StepCompletedData(output=b"o"))], "owner"),
        (
            [
                EventRequest(
                    EventType.STEP_CREATED,
                    "s1",
                    StepCreatedData(step_name=STEP, input=b"i", via_step_dispatch=True),
                )
            ],
            "re-ensure",
        ),
        ([EventRequest(EventType.STEP_STARTED, "s1", StepStartedData(owner=OWNER))], "cannot be appended"),
        ([owned_create("s1"), owned_outcome("s1")], "twice"),
    ],
    ids=["empty", "outcome-no-owner", "a-re-ensure", "a-start", "one-step-twice"],
)
def test_a_batch_that_is_not_owned_step_writes_is_bad_input(
    world: World, requests: list[EventRequest], message: str
) -> None:
    run_id = create_run(world)
    after = last_position(world, run_id)
    with pytest.raises(BadInput, match=message):
        world.events.append_after(run_id, after, requests, at=world.clock.now())
    assert last_position(world, run_id) == after


def test_a_stamp_later_than_the_worlds_now_is_bad_input(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    after = last_position(world, run_id)
    with pytest.raises(BadInput, match="later than the World's now"):
        world.events.append_after(
            run_id, after, [owned_create(new_id("step"))], at=clock.now() + timedelta(seconds=5)
        )
    assert last_position(world, run_id) == after


def race_append(
    world: World, run_id: str, after: int, batch: list[EventRequest], rival: Callable[[], object]
) -> object:
    """``append_after(batch)`` and ``rival()`` released at once from two threads; the append's result."""
    barrier = threading.Barrier(2)

    def append() -> object:
        barrier.wait()
        return world.events.append_after(run_id, after, batch, at=world.clock.now())

    def other() -> object:
        barrier.wait()
        return rival()

    with ThreadPoolExecutor(2) as pool:
        appended, _ = pool.submit(append), pool.submit(other)
        return appended.result()


def test_a_batch_racing_the_runs_end_never_lands_after_it(world: World) -> None:
    # GIVEN runs whose owned step's outcome and next create race their run's completion
    for _ in range(8):
        run_id = create_run(world)
        done = running_owned(world, run_id)
        after = last_position(world, run_id)
        batch = [owned_outcome(done), owned_create(new_id("step"))]
        # WHEN both go at once
        landed = race_append(world, run_id, after, batch, partial(end_run, world, run_id))
        # THEN the log ends with run_completed: the batch landed before it or not at all
        types = [e.type for e in world.events.list(run_id)]
        assert types[-1] is EventType.RUN_COMPLETED
        assert types.count(EventType.STEP_CREATED) == (2 if landed is not None else 1)


# --- a step appended alone (the sequential shape: an outcome and the next create) ---------
# A World may store such a step differently while its owner runs it (the AWS World writes
# its item with the outcome): every read and write of it must be as for any owned step.


def appended_alone(world: World, run_id: str) -> str:
    """An owned step created by an append of its create alone (the next step of a sequence)."""
    step_id = new_id("step")
    results = world.events.append_after(
        run_id, last_position(world, run_id), [owned_create(step_id)], at=world.clock.now()
    )
    assert results is not None
    return step_id


def test_a_step_appended_alone_reads_lists_and_settles_like_any_owned_step(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a dispatched step, then an owned step appended alone
    run_id = create_run(world)
    first = create_step(world, run_id)
    alone = appended_alone(world, run_id)
    # THEN it reads as running at attempt 1 with its input, listed after the first
    step = world.steps.get(run_id, alone)
    assert (step.status, step.attempt, step.input, step.started_at) == (
        StepStatus.RUNNING,
        1,
        b"in",
        step.created_at,
    )
    assert world.steps.get(run_id, alone, resolve_data=ResolveData.NONE).input is None
    assert [s.step_id for s in world.steps.list(run_id)] == [first, alone]
    # WHEN its outcome is appended with the next step's create, and that one completes one by one
    clock.advance(1)
    after = last_position(world, run_id)
    nxt = new_id("step")
    assert world.events.append_after(run_id, after, [owned_outcome(alone), owned_create(nxt)], at=clock.now())
    write(world, run_id, EventType.STEP_COMPLETED, nxt, StepCompletedData(output=b"next", owner=OWNER))
    # THEN both are completed with their outputs, in creation order, and nothing is pending but first
    listed = world.steps.list(run_id)
    assert [(s.step_id, s.status, s.output) for s in listed] == [
        (first, StepStatus.PENDING, None),
        (alone, StepStatus.COMPLETED, b"out"),
        (nxt, StepStatus.COMPLETED, b"next"),
    ]
    assert world.steps.get(run_id, alone).completed_at == clock.now()
    assert world.steps.any_pending(run_id, besides=first) is False


def test_a_step_appended_alone_is_taken_over_retried_and_failed_one_by_one(
    world: World, clock: ManualClock
) -> None:
    # GIVEN an owned step appended alone
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    # WHEN another delivery takes it over, its attempt fails with a retry, and the next fails
    taken = write(
        world, run_id, EventType.STEP_STARTED, alone, StepStartedData(step_name=STEP, owner="m-2#1#h")
    )
    # THEN the takeover is attempt 2 with the step's input; the retry leaves it pending; then failed
    assert taken.step is not None and (taken.step.attempt, taken.step.input) == (2, b"in")
    retry_at = world.clock.now() + timedelta(seconds=30)
    write(world, run_id, EventType.STEP_RETRYING, alone, StepRetryingData(error=b"e1", retry_after=retry_at))
    pending = world.steps.get(run_id, alone)
    assert (pending.status, pending.attempt, pending.error) == (StepStatus.PENDING, 2, b"e1")
    clock.advance(31)
    start_step(world, run_id, alone)
    write(world, run_id, EventType.STEP_FAILED, alone, StepFailedData(error=b"e2"))
    failed = world.steps.get(run_id, alone)
    assert (failed.status, failed.attempt, failed.error) == (StepStatus.FAILED, 3, b"e2")


def test_a_step_appended_alone_cannot_be_created_again(world: World) -> None:
    # GIVEN an owned step appended alone, and a dispatched step created one by one
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    dispatched = create_step(world, run_id)
    # WHEN each is created again one by one and as a consumer's re-ensure, and the one
    # appended alone also in an append (append_after's precondition: its creates name steps
    # not in the log it read, so a World need not check that for the dispatched one)
    for step_id in (alone, dispatched):
        with pytest.raises(Conflict):
            create_step(world, run_id, step_id=step_id)
        again = StepCreatedData(step_name=STEP, input=b"in", via_step_dispatch=True)
        with pytest.raises(Conflict):
            write(world, run_id, EventType.STEP_CREATED, step_id, again)
    after = last_position(world, run_id)
    refused = world.events.append_after(run_id, after, [owned_create(alone)], at=world.clock.now())
    # THEN every one is refused, and the log holds one create of each
    assert refused is None
    assert last_position(world, run_id) == after
    creates = [e.correlation_id for e in world.events.list(run_id) if e.type is EventType.STEP_CREATED]
    assert creates == [alone, dispatched]
    assert world.steps.get(run_id, alone).status is StepStatus.RUNNING


@pytest.mark.parametrize("settled", [EventType.STEP_COMPLETED, EventType.STEP_FAILED])
def test_a_step_its_owner_settled_in_an_append_is_never_created_started_or_settled_again(
    world: World, clock: ManualClock, settled: EventType
) -> None:
    # GIVEN an owned step appended alone, settled by its owner's append with the next create,
    # and the next one settled likewise (the sequential shape: a World may keep such a step
    # in its log alone)
    run_id = create_run(world)
    alone = appended_alone(world, run_id)
    clock.advance(1)
    completed = settled is EventType.STEP_COMPLETED
    data = (
        StepCompletedData(output=b"out", owner=OWNER)
        if completed
        else StepFailedData(error=b"bad", owner=OWNER)
    )
    nxt = new_id("step")
    for batch in ([EventRequest(settled, alone, data), owned_create(nxt)], [owned_outcome(nxt)]):
        assert world.events.append_after(run_id, last_position(world, run_id), batch, at=clock.now())
    after = last_position(world, run_id)
    # WHEN it is created again one by one and as a consumer's re-ensure
    with pytest.raises(Conflict):
        create_step(world, run_id, step_id=alone)
    again = StepCreatedData(step_name=STEP, input=b"in", via_step_dispatch=True)
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_CREATED, alone, again)
    # AND started again (a stale takeover), and settled again one by one
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_STARTED, alone, StepStartedData(step_name=STEP, owner="m-2#1#h"))
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_COMPLETED, alone, StepCompletedData(output=b"late", owner=OWNER))
    # THEN every one is refused, nothing of them is listed, and both steps read as their owner left them
    assert [e.correlation_id for e in world.events.list(run_id, after=after)] == []
    creates = [e.correlation_id for e in world.events.list(run_id) if e.type is EventType.STEP_CREATED]
    assert creates == [alone, nxt]
    step = world.steps.get(run_id, alone)
    if completed:
        assert (step.status, step.output, step.attempt) == (StepStatus.COMPLETED, b"out", 1)
    else:
        assert (step.status, step.error, step.attempt) == (StepStatus.FAILED, b"bad", 1)
    assert step.completed_at == clock.now()
    listed = world.steps.list(run_id)
    assert [(s.step_id, s.status) for s in listed] == [(alone, step.status), (nxt, StepStatus.COMPLETED)]
    assert world.steps.get(run_id, nxt).output == b"out"
    assert world.steps.any_pending(run_id) is False


# --- the run's end closing a batch (the last outcome and run_completed / run_failed) ------

ENDS: dict[EventType, EventData] = {
    EventType.RUN_COMPLETED: RunCompletedData(output=b"run-output"),
    EventType.RUN_FAILED: RunFailedData(error=b"run-error", error_code="E_TEST"),
}


@pytest.mark.parametrize("ending", list(ENDS), ids=["completed", "failed"])
@pytest.mark.parametrize("alone", [True, False], ids=["appended-alone", "created-one-by-one"])
def test_the_last_outcome_and_the_runs_end_land_together(
    world: World, clock: ManualClock, ending: EventType, alone: bool
) -> None:
    # GIVEN a run whose owned step runs, with a live hook, in the live index
    run_id = create_run(world)
    done = appended_alone(world, run_id) if alone else running_owned(world, run_id)
    token = new_id("tok")
    create_hook(world, run_id, token)
    after = last_position(world, run_id)
    clock.advance(1)
    # WHEN its outcome and the run's end are appended after the log's end
    results = world.events.append_after(
        run_id, after, [owned_outcome(done), EventRequest(ending, data=ENDS[ending])], at=clock.now()
    )
    # THEN both land, the run's end last, and everything is as if written one by one
    assert results is not None
    assert [e.type for e in world.events.list(run_id, after=after)] == [EventType.STEP_COMPLETED, ending]
    assert [r.event.position for r in results if r.event] == [after + 1, after + 2]
    run = world.runs.get(run_id)
    if ending is EventType.RUN_COMPLETED:
        assert (run.status, run.output) == (RunStatus.COMPLETED, b"run-output")
    else:
        assert (run.status, run.error, run.error_code) == (RunStatus.FAILED, b"run-error", "E_TEST")
    assert run.completed_at == clock.now()
    assert world.steps.get(run_id, done).status is StepStatus.COMPLETED
    # AND the run left the live index, its hooks were released, and the fence holds
    assert run_id not in {live.run_id for live in world.runs.list_live(marked_before=clock.now(), limit=100)}
    assert world.hooks.list(run_id) == []
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)
    with pytest.raises(RunExpired):
        world.events.create(run_id, owned_create(new_id("step")))


def test_the_runs_end_is_not_appended_to_a_run_that_ended(world: World) -> None:
    # GIVEN a run cancelled while its owned step ran
    run_id = create_run(world)
    done = appended_alone(world, run_id)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    after = last_position(world, run_id)
    # WHEN the owner appends its outcome and run_completed after the cancel
    end = EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=b"o"))
    results = world.events.append_after(run_id, after, [owned_outcome(done), end], at=world.clock.now())
    # THEN nothing lands: the run stays cancelled, its log ends with the cancel
    assert results is None
    assert world.runs.get(run_id).status is RunStatus.CANCELLED
    assert world.events.list(run_id)[-1].type is EventType.RUN_CANCELLED


def test_the_runs_end_in_a_batch_racing_a_cancel_ends_the_run_once(world: World) -> None:
    # GIVEN runs whose last owned outcome and run_completed race a cancel
    for _ in range(8):
        run_id = create_run(world)
        done = appended_alone(world, run_id)
        after = last_position(world, run_id)
        batch = [
            owned_outcome(done),
            EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=b"o")),
        ]

        def cancel(run_id: str = run_id) -> object:
            with contextlib.suppress(Conflict):
                return end_run(world, run_id, EventType.RUN_CANCELLED)
            return None

        # WHEN both go at once
        landed = race_append(world, run_id, after, batch, cancel)
        # THEN the log holds exactly one terminal event, last, and the run's status is it
        types = [e.type for e in world.events.list(run_id)]
        terminal = [t for t in types if t in {EventType.RUN_COMPLETED, EventType.RUN_CANCELLED}]
        assert len(terminal) == 1 and types[-1] is terminal[0]
        expected = RunStatus.COMPLETED if landed is not None else RunStatus.CANCELLED
        assert world.runs.get(run_id).status is expected
        assert terminal[0] is (EventType.RUN_COMPLETED if landed is not None else EventType.RUN_CANCELLED)


@pytest.mark.parametrize(
    "requests",
    [
        [EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=b"o"))],
        [EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=b"o")), owned_outcome("s1")],
        [owned_outcome("s1"), EventRequest(EventType.RUN_CANCELLED, data=RunCancelledData(reason="r"))],
        [owned_outcome("s1"), EventRequest(EventType.RUN_STARTED)],
    ],
    ids=["end-alone", "end-first", "a-cancel", "a-start"],
)
def test_a_batch_whose_run_event_is_not_a_closing_end_is_bad_input(
    world: World, requests: list[EventRequest]
) -> None:
    run_id = create_run(world)
    after = last_position(world, run_id)
    with pytest.raises(BadInput, match="in a batch"):
        world.events.append_after(run_id, after, requests, at=world.clock.now())
    assert last_position(world, run_id) == after


# --- the run's start opening a batch (a pending run's run_started and its first creates) --


def test_a_pending_runs_start_and_first_creates_land_together(world: World, clock: ManualClock) -> None:
    # GIVEN a pending run (created, not started)
    run_id = create_run(world, started=False)
    after = last_position(world, run_id)
    clock.advance(1)
    steps = [new_id("step"), new_id("step")]
    # WHEN its run_started and two owned creates are appended after its log's end
    start = EventRequest(EventType.RUN_STARTED)
    results = world.events.append_after(
        run_id, after, [start, *(owned_create(s) for s in steps)], at=clock.now()
    )
    # THEN they land in that order, the run is running since then, and its steps run owned
    assert results is not None
    listed = world.events.list(run_id, after=after)
    assert [(e.type, e.correlation_id) for e in listed] == [
        (EventType.RUN_STARTED, None),
        (EventType.STEP_CREATED, steps[0]),
        (EventType.STEP_CREATED, steps[1]),
    ]
    assert [r.event.position for r in results if r.event] == [after + 1, after + 2, after + 3]
    run = world.runs.get(run_id)
    assert (run.status, run.started_at, run.input) == (RunStatus.RUNNING, clock.now(), b"run-input")
    assert {world.steps.get(run_id, s).status for s in steps} == {StepStatus.RUNNING}
    # AND a second start is the accepted no-op, one by one, and refuses a batch
    assert write(world, run_id, EventType.RUN_STARTED).event is None
    again = [start, owned_create(new_id("step"))]
    assert world.events.append_after(run_id, after + 3, again, at=clock.now()) is None


def test_a_start_is_not_appended_to_a_run_cancelled_while_pending(world: World) -> None:
    # GIVEN a run cancelled before it started
    run_id = create_run(world, started=False)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    after = last_position(world, run_id)
    # WHEN its start and a create are appended
    batch = [EventRequest(EventType.RUN_STARTED), owned_create(new_id("step"))]
    # THEN nothing lands
    assert world.events.append_after(run_id, after, batch, at=world.clock.now()) is None
    assert world.events.list(run_id)[-1].type is EventType.RUN_CANCELLED
    assert world.steps.list(run_id) == []


@pytest.mark.parametrize(
    ("requests", "message"),
    [
        ([EventRequest(EventType.RUN_STARTED)], "comes with a step write"),
        (
            [
                EventRequest(EventType.RUN_STARTED),
                owned_create("s1"),
                EventRequest(EventType.RUN_FAILED, data=RunFailedData(error=b"e")),
            ],
            "not both",
        ),
        ([owned_create("s1"), EventRequest(EventType.RUN_STARTED)], "cannot be appended"),
    ],
    ids=["start-alone", "start-and-end", "start-last"],
)
def test_a_batch_whose_start_is_out_of_place_is_bad_input(
    world: World, requests: list[EventRequest], message: str
) -> None:
    run_id = create_run(world, started=False)
    after = last_position(world, run_id)
    with pytest.raises(BadInput, match=message):
        world.events.append_after(run_id, after, requests, at=world.clock.now())
    assert last_position(world, run_id) == after


def dispatched_create(step_id: str) -> EventRequest:
    """The producer's create of a dispatched step (no owner: its consumer will claim it)."""
    return EventRequest(EventType.STEP_CREATED, step_id, StepCreatedData(step_name=STEP, input=b"in"))


@pytest.mark.parametrize("count", [1, 3], ids=["alone", "a-wave"])
def test_dispatched_creates_appended_are_pending_steps_their_consumers_claim(
    world: World, count: int
) -> None:
    # GIVEN a pass's dispatched creates appended (a fan-out's branches past the inline ones)
    run_id = create_run(world)
    after = last_position(world, run_id)
    step_ids = [new_id("step") for _ in range(count)]
    results = world.events.append_after(
        run_id, after, [dispatched_create(s) for s in step_ids], at=world.clock.now()
    )
    # THEN they landed at the positions after, each a pending step with its input, that the
    # last completer counts as pending
    assert results is not None
    assert [r.event.position for r in results if r.event is not None] == list(
        range(after + 1, after + 1 + count)
    )
    for step_id in step_ids:
        step = world.steps.get(run_id, step_id)
        assert (step.status, step.attempt, step.input) == (StepStatus.PENDING, 0, b"in")
    assert world.steps.any_pending(run_id, besides=new_id("step")) is True
    assert world.steps.any_pending(run_id, besides=step_ids[0]) is (count > 1)
    # WHEN a consumer claims the first, and re-ensures the last from its message
    started = start_step(world, run_id, step_ids[0])
    again = StepCreatedData(step_name=STEP, input=b"in", via_step_dispatch=True)
    with pytest.raises(Conflict):
        write(world, run_id, EventType.STEP_CREATED, step_ids[-1], again)
    # THEN the claim is attempt 1 with the input; the re-ensure found the step there
    assert started.step is not None and (started.step.status, started.step.attempt) == (StepStatus.RUNNING, 1)
    assert started.step.input == b"in"
    write(world, run_id, EventType.STEP_COMPLETED, step_ids[0], StepCompletedData(output=b"done"))
    assert world.steps.any_pending(run_id, besides=step_ids[0]) is (count > 1)
    creates = [e for e in world.events.list(run_id) if e.type is EventType.STEP_CREATED]
    assert [e.correlation_id for e in creates] == step_ids
