"""Conformance under real threads: the fence (contract §3.1), dense positions (§3.2), single creates.

Each test lines its writers up on a barrier (:class:`Racer`) so they hit the
World at once, and checks the invariant on the state read back afterwards.
Each iteration is a function of its own on a fresh run, so the calls it races
bind that run and nothing else. Iteration counts are part of what these tests
promise; keep them, and keep each iteration cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from itertools import pairwise

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventResult,
    EventType,
    HookConflictData,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    StepStatus,
)
from world_aws.contract.world import World
from world_aws.errors import Conflict, RunExpired
from world_aws.testing.conformance.support import (
    STEP,
    Racer,
    create_hook,
    create_run,
    create_step,
    create_wait,
    end_run,
    new_id,
    receive_hook,
    running_step,
    start_step,
    write,
)

Outcome = EventResult | Exception


def _failures(outcomes: list[Outcome], allowed: type[Exception] | None = None) -> list[Exception]:
    """The exceptions among ``outcomes`` that are not of the ``allowed`` kind."""
    return [
        o for o in outcomes if isinstance(o, Exception) and (allowed is None or not isinstance(o, allowed))
    ]


def _assert_dense(world: World, run_id: str) -> None:
    """Positions exactly 1..n: for runs where no write was refused."""
    log = world.events.list(run_id)
    assert [e.position for e in log] == list(range(1, len(log) + 1))


def _assert_ordered(world: World, run_id: str) -> None:
    """Positions strictly increasing from 1, no duplicate: for runs where writes were refused.

    A World that reserves a position before its entity check seals the refused
    writer's position with a ``noop`` that reads leave out (contract §3.2), so
    the visible positions may skip numbers there, but never repeat or go back.
    """
    positions = [e.position for e in world.events.list(run_id)]
    assert positions[:1] == [1]
    assert all(a < b for a, b in pairwise(positions)), positions


# ----------------------------------------------------------------------------- (a) the fence


def test_run_completed_racing_step_started_never_leaves_a_start_after_the_end(
    world: World, race_iterations: int
) -> None:
    with Racer(8) as racer:
        for iteration in range(race_iterations):
            # odd iterations: the steps already run, so every start is a redelivery
            _race_end_against_starts(world, racer, steps_running=iteration % 2 == 1)


def _race_end_against_starts(world: World, racer: Racer, *, steps_running: bool) -> None:
    # GIVEN a running run with 7 steps
    run_id = create_run(world)
    step_ids = [create_step(world, run_id) for _ in range(7)]
    if steps_running:
        for step_id in step_ids:
            start_step(world, run_id, step_id)
    setup = len(world.events.list(run_id))
    # WHEN run_completed and 7 step_started hit the World at once
    calls: list[Callable[[], EventResult]] = [partial(end_run, world, run_id)]
    calls += [partial(start_step, world, run_id, step_id) for step_id in step_ids]
    outcomes = racer.race(calls)
    # THEN the run completed and every refused start is RunExpired ...
    assert _failures(outcomes[:1]) == []
    starts = outcomes[1:]
    assert _failures(starts, RunExpired) == []
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    # ... the log is ordered and no step_started sits after run_completed ...
    _assert_ordered(world, run_id)
    log = world.events.list(run_id)
    end_at = next(e.position for e in log if e.type is EventType.RUN_COMPLETED)
    assert [e for e in log if e.type is EventType.STEP_STARTED and e.position > end_at] == []
    # ... and the race appended exactly run_completed and the accepted starts
    accepted = sorted(s for s, o in zip(step_ids, starts, strict=True) if not isinstance(o, Exception))
    raced = log[setup:]
    assert sorted(e.correlation_id or "" for e in raced if e.type is EventType.STEP_STARTED) == accepted
    assert len(raced) == 1 + len(accepted)


# ----------------------------------------------------------------------------- (b) dense positions


def test_concurrent_writers_to_one_run_get_dense_positions(world: World) -> None:
    with Racer(32) as racer:
        for _ in range(5):
            _race_writers(world, racer, writers=32)


def _create_and_start(world: World, run_id: str, step_id: str) -> EventResult:
    create_step(world, run_id, step_id=step_id)
    return start_step(world, run_id, step_id)


def _race_writers(world: World, racer: Racer, *, writers: int) -> None:
    # GIVEN a running run (2 events)
    run_id = create_run(world)
    step_ids = [new_id("step") for _ in range(writers)]
    # WHEN 32 writers each create and start their own step at once
    outcomes = racer.race([partial(_create_and_start, world, run_id, step_id) for step_id in step_ids])
    # THEN every write landed, at positions exactly 1..n with no duplicate and no hole
    assert _failures(outcomes) == []
    log = world.events.list(run_id)
    assert [e.position for e in log] == list(range(1, 2 + 2 * writers + 1))
    assert sorted(e.correlation_id or "" for e in log if e.type is EventType.STEP_CREATED) == sorted(step_ids)
    for step_id in step_ids:
        own = [e.type for e in log if e.correlation_id == step_id]
        assert own == [EventType.STEP_CREATED, EventType.STEP_STARTED]
        assert world.steps.get(run_id, step_id).attempt == 1


# ----------------------------------------------------------------------------- (c) one create wins


def test_concurrent_duplicate_step_creates_converge_on_one_step(world: World) -> None:
    with Racer(16) as racer:
        for _ in range(10):
            _race_duplicate_creates(world, racer, width=16)


def _race_duplicate_creates(world: World, racer: Racer, *, width: int) -> None:
    # GIVEN one step id that 16 writers (a replay and resilient re-ensures) all create
    run_id = create_run(world)
    step_id = new_id("step")
    inputs = [f"input-{i}".encode() for i in range(width)]
    requests = [StepCreatedData(step_name=STEP, input=data) for data in inputs]
    outcomes = racer.race(
        [partial(write, world, run_id, EventType.STEP_CREATED, step_id, data) for data in requests]
    )
    # THEN exactly one succeeds and the others get Conflict ...
    winners = [data for data, o in zip(inputs, outcomes, strict=True) if not isinstance(o, Exception)]
    assert len(winners) == 1
    assert _failures(outcomes, Conflict) == []
    # ... and one step exists, with the winner's input, created once in the log
    assert [s.step_id for s in world.steps.list(run_id)] == [step_id]
    assert world.steps.get(run_id, step_id).input == winners[0]
    assert [e.type for e in world.events.list(run_id)].count(EventType.STEP_CREATED) == 1


# ----------------------------------------------------------------------------- (d) late outcomes


def test_running_steps_record_their_outcome_while_the_run_completes(world: World) -> None:
    with Racer(9) as racer:
        for _ in range(20):
            _race_end_against_outcomes(world, racer, steps=8)


def _race_end_against_outcomes(world: World, racer: Racer, *, steps: int) -> None:
    # GIVEN a run with 8 running steps
    run_id = create_run(world)
    step_ids = [running_step(world, run_id) for _ in range(steps)]
    # WHEN run_completed races the 8 step_completed
    done = StepCompletedData(output=b"ok")
    calls: list[Callable[[], EventResult]] = [partial(end_run, world, run_id)]
    calls += [partial(write, world, run_id, EventType.STEP_COMPLETED, s, done) for s in step_ids]
    outcomes = racer.race(calls)
    # THEN every outcome is accepted, whether it landed before or after the end of the run
    assert _failures(outcomes) == []
    assert world.runs.get(run_id).status is RunStatus.COMPLETED
    assert all(world.steps.get(run_id, s).status is StepStatus.COMPLETED for s in step_ids)
    _assert_dense(world, run_id)


def test_concurrent_last_outcomes_leave_exactly_the_last_completer_seeing_none_pending(world: World) -> None:
    with Racer(8) as racer:
        for _ in range(10):
            _race_last_completers(world, racer, steps=8)


def _race_last_completers(world: World, racer: Racer, *, steps: int) -> None:
    # GIVEN a fan-out of 8 running steps
    run_id = create_run(world)
    step_ids = [running_step(world, run_id) for _ in range(steps)]

    def complete_then_check(step_id: str) -> bool:
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"ok"))
        return world.steps.any_pending(run_id, besides=step_id)

    # WHEN every branch records its outcome and then asks whether others are pending
    outcomes = racer.race([partial(complete_then_check, s) for s in step_ids])
    # THEN at least one branch is told none is pending (the continuation is never lost),
    # and once all have finished, none is
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert False in outcomes
    assert world.steps.any_pending(run_id) is False


def test_racing_continuation_claims_of_one_wave_have_one_winner(world: World) -> None:
    with Racer(8) as racer:
        for _ in range(10):
            _race_continuation_claims(world, racer, steps=8)


def _race_continuation_claims(world: World, racer: Racer, *, steps: int) -> None:
    # GIVEN a wave of 8 steps whose outcomes are all recorded
    run_id = create_run(world)
    step_ids = [running_step(world, run_id) for _ in range(steps)]
    done = StepCompletedData(output=b"ok")
    positions = {}
    for step_id in step_ids:
        result = write(world, run_id, EventType.STEP_COMPLETED, step_id, done)
        assert result.event is not None
        positions[step_id] = result.event.position
    # WHEN every completer claims the continuation at once
    outcomes = racer.race(
        [partial(world.runs.claim_continuation, run_id, after=positions[s], claimer=s) for s in step_ids]
    )
    # THEN exactly one gets the run
    assert [o for o in outcomes if isinstance(o, Exception)] == []
    assert len([o for o in outcomes if o is not None]) == 1


# ----------------------------------------------------------------------------- hooks and waits


def test_concurrent_hook_creates_on_one_token_yield_one_hook(world: World) -> None:
    with Racer(8) as racer:
        for _ in range(10):
            _race_token(world, racer, runs=8)


def _race_token(world: World, racer: Racer, *, runs: int) -> None:
    # GIVEN 8 runs that each create a hook with the same token at once
    token = new_id("tok")
    run_ids = [create_run(world) for _ in range(runs)]
    outcomes = racer.race([partial(create_hook, world, run_id, token) for run_id in run_ids])
    # THEN one run owns the hook; every other one got a hook_conflict naming it
    assert _failures(outcomes) == []
    results = [o for o in outcomes if isinstance(o, EventResult)]
    owners = [run_id for run_id, o in zip(run_ids, results, strict=True) if o.hook is not None]
    assert len(owners) == 1
    assert world.hooks.get_by_token(token).run_id == owners[0]
    for result in results:
        if result.hook is None:
            assert result.event is not None and result.event.type is EventType.HOOK_CONFLICT
            assert result.event.data_as(HookConflictData).conflicting_run_id == owners[0]


def test_concurrent_resumes_with_one_resume_id_append_one_event(world: World) -> None:
    with Racer(8) as racer:
        for _ in range(10):
            _race_resume(world, racer, width=8)


def _race_resume(world: World, racer: Racer, *, width: int) -> None:
    # GIVEN a live hook and 8 writers of the same resume (same resume_id)
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    resume = partial(receive_hook, world, run_id, hook.hook_id, b"p", resume_id=new_id("resume"))
    outcomes = racer.race([resume] * width)
    # THEN one hook_received is in the log and every writer got it back
    assert _failures(outcomes) == []
    received = [e for e in world.events.list(run_id) if e.type is EventType.HOOK_RECEIVED]
    assert len(received) == 1
    positions = {o.event.position for o in outcomes if isinstance(o, EventResult) and o.event is not None}
    assert positions == {received[0].position}


def test_concurrent_wait_completions_succeed_once(world: World, clock: ManualClock) -> None:
    with Racer(8) as racer:
        for _ in range(10):
            _race_wait(world, racer, clock, width=8)


def _race_wait(world: World, racer: Racer, clock: ManualClock, *, width: int) -> None:
    run_id = create_run(world)
    wait_id = create_wait(world, run_id, clock.now())
    outcomes = racer.race([partial(write, world, run_id, EventType.WAIT_COMPLETED, wait_id)] * width)
    assert sum(isinstance(o, EventResult) for o in outcomes) == 1
    assert _failures(outcomes, Conflict) == []
    assert [e.type for e in world.events.list(run_id)].count(EventType.WAIT_COMPLETED) == 1
