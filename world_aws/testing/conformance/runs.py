"""Conformance: the run state machine (contract §2.1), ``runs.get`` / ``runs.list``, and
``events.list_with_run`` (a continuation's read of its run and its log in one call)."""

from __future__ import annotations

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventType,
    ResolveData,
    RunCompletedData,
    RunCreatedData,
    RunFailedData,
    RunStartedData,
    RunStatus,
    StepCompletedData,
)
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, NotFound
from world_aws.testing.conformance.support import (
    WORKFLOW,
    create_hook,
    create_run,
    create_step,
    create_wait,
    creation,
    end_run,
    new_id,
    receive_hook,
    running_step,
    start_step,
    types_of,
    write,
)


def test_run_created_makes_a_pending_run(world: World, clock: ManualClock) -> None:
    # GIVEN a fresh run id
    run_id = new_id("wrun")
    # WHEN run_created is written
    result = write(
        world,
        run_id,
        EventType.RUN_CREATED,
        data=RunCreatedData(creation=creation(b"abc", attributes={"k": "v"})),
    )
    # THEN the run is pending with the creation data, and the log holds run_created at 1
    run = world.runs.get(run_id)
    assert run.status is RunStatus.PENDING
    assert (run.workflow_name, run.deployment_id, run.input, run.attributes) == (
        WORKFLOW,
        "dpl_conformance",
        b"abc",
        {"k": "v"},
    )
    assert run.created_at == clock.now()
    assert run.started_at is None and run.completed_at is None
    assert result.event is not None and result.event.position == 1
    assert result.run is not None and result.run.status is RunStatus.PENDING


def test_run_created_with_existing_id_is_conflict(world: World) -> None:
    run_id = create_run(world, input=b"first")
    with pytest.raises(Conflict):
        write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=creation(b"second")))
    assert world.runs.get(run_id).input == b"first"
    assert types_of(world, run_id) == [EventType.RUN_CREATED, EventType.RUN_STARTED]


def test_run_created_without_creation_data_is_bad_input(world: World) -> None:
    with pytest.raises(BadInput):
        write(world, new_id("wrun"), EventType.RUN_CREATED)


def test_run_started_moves_pending_run_to_running(world: World, clock: ManualClock) -> None:
    run_id = create_run(world, started=False)
    clock.advance(5)
    result = write(world, run_id, EventType.RUN_STARTED)
    run = world.runs.get(run_id)
    assert run.status is RunStatus.RUNNING
    assert run.started_at == clock.now()
    assert result.event is not None and result.event.type is EventType.RUN_STARTED


def test_run_started_on_running_run_changes_nothing(world: World, clock: ManualClock) -> None:
    # GIVEN a running run
    run_id = create_run(world)
    before = world.runs.get(run_id)
    clock.advance(5)
    # WHEN run_started is written again
    result = write(world, run_id, EventType.RUN_STARTED)
    # THEN it is accepted as a no-op: no event, the run returned unchanged, nothing appended
    assert result.event is None
    assert result.run is not None and result.run.status is RunStatus.RUNNING
    assert world.runs.get(run_id) == before
    assert types_of(world, run_id) == [EventType.RUN_CREATED, EventType.RUN_STARTED]


def test_run_started_with_creation_data_creates_missing_run(world: World) -> None:
    # GIVEN no run_created ever landed (resilient start, contract §6.1)
    run_id = new_id("wrun")
    # WHEN run_started carries the creation data
    result = write(world, run_id, EventType.RUN_STARTED, data=RunStartedData(creation=creation(b"resilient")))
    # THEN the run exists, running, and the log is run_created at 1, run_started at 2
    run = world.runs.get(run_id)
    assert run.status is RunStatus.RUNNING
    assert run.input == b"resilient"
    events = world.events.list(run_id)
    assert [(e.position, e.type) for e in events] == [(1, EventType.RUN_CREATED), (2, EventType.RUN_STARTED)]
    created = events[0].data_as(RunCreatedData).creation
    assert created is not None and created.input == b"resilient"
    assert result.event is not None and result.event.position == 2


def test_run_started_with_creation_data_on_pending_run_only_starts_it(world: World) -> None:
    run_id = create_run(world, input=b"original", started=False)
    write(world, run_id, EventType.RUN_STARTED, data=RunStartedData(creation=creation(b"other")))
    run = world.runs.get(run_id)
    assert run.status is RunStatus.RUNNING and run.input == b"original"
    assert types_of(world, run_id) == [EventType.RUN_CREATED, EventType.RUN_STARTED]


def test_a_pending_run_takes_a_whole_prefix_before_it_starts(world: World, clock: ManualClock) -> None:
    # A fork's copied log (client/forks.py) is written while the fork is pending: a step's
    # whole life, a hook with a payload, its disposal, a wait and its completion.
    run_id = create_run(world, started=False)
    step_id = create_step(world, run_id)
    start_step(world, run_id, step_id)
    write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"copied"))
    hook_id = new_id("hook")
    create_hook(world, run_id, "tok-pending-prefix", hook_id=hook_id)
    receive_hook(world, run_id, hook_id, b"payload", resume_id="resume-1")
    receive_hook(world, run_id, hook_id, b"payload", resume_id="resume-1")  # deduplicated
    write(world, run_id, EventType.HOOK_DISPOSED, hook_id)
    wait_id = create_wait(world, run_id, clock.now())
    write(world, run_id, EventType.WAIT_COMPLETED, wait_id)
    # THEN the run is still pending, with nothing pending of its own, and starts after it
    assert world.runs.get(run_id).status is RunStatus.PENDING
    assert world.steps.any_pending(run_id) is False
    write(world, run_id, EventType.RUN_STARTED)
    assert world.runs.get(run_id).status is RunStatus.RUNNING
    assert world.steps.get(run_id, step_id).output == b"copied"
    assert types_of(world, run_id) == [
        EventType.RUN_CREATED,
        EventType.STEP_CREATED,
        EventType.STEP_STARTED,
        EventType.STEP_COMPLETED,
        EventType.HOOK_CREATED,
        EventType.HOOK_RECEIVED,
        EventType.HOOK_DISPOSED,
        EventType.WAIT_CREATED,
        EventType.WAIT_COMPLETED,
        EventType.RUN_STARTED,
    ]


def test_run_started_on_missing_run_without_creation_data_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        write(world, new_id("wrun"), EventType.RUN_STARTED)


def test_run_end_on_missing_run_is_not_found(world: World) -> None:
    for how in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
        with pytest.raises(NotFound):
            end_run(world, new_id("wrun"), how)


def test_run_completed_records_output(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    clock.advance(3)
    write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"done"))
    run = world.runs.get(run_id)
    assert (run.status, run.output, run.completed_at) == (RunStatus.COMPLETED, b"done", clock.now())


def test_run_failed_records_error_and_code(world: World) -> None:
    run_id = create_run(world)
    write(world, run_id, EventType.RUN_FAILED, data=RunFailedData(error=b"boom", error_code="E_X"))
    run = world.runs.get(run_id)
    assert (run.status, run.error, run.error_code) == (RunStatus.FAILED, b"boom", "E_X")
    assert run.completed_at is not None


def test_run_cancelled_ends_pending_and_running_runs(world: World) -> None:
    for started in (False, True):
        run_id = create_run(world, started=started)
        end_run(world, run_id, EventType.RUN_CANCELLED)
        assert world.runs.get(run_id).status is RunStatus.CANCELLED


def test_run_completed_or_failed_on_pending_run_is_conflict(world: World) -> None:
    run_id = create_run(world, started=False)
    for how in (EventType.RUN_COMPLETED, EventType.RUN_FAILED):
        with pytest.raises(Conflict):
            end_run(world, run_id, how)
    assert world.runs.get(run_id).status is RunStatus.PENDING


def test_transition_out_of_terminal_run_is_conflict(world: World) -> None:
    # GIVEN a run in each terminal state
    for ending in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
        run_id = create_run(world)
        end_run(world, run_id, ending)
        status = world.runs.get(run_id).status
        length = len(world.events.list(run_id))
        # WHEN any run transition follows THEN Conflict, and nothing changes
        for how in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
            with pytest.raises(Conflict):
                end_run(world, run_id, how)
        with pytest.raises(Conflict):
            write(world, run_id, EventType.RUN_STARTED)
        assert world.runs.get(run_id).status is status
        assert len(world.events.list(run_id)) == length


def test_runs_get_of_missing_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.runs.get(new_id("wrun"))


def test_run_attributes_round_trip_and_name_the_root_run(world: World) -> None:
    root = new_id("wrun")
    child = create_run(world, attributes={"$root_run_id": root, "$parent_run_id": root, "team": "a"})
    run = world.runs.get(child)
    assert run.attributes == {"$root_run_id": root, "$parent_run_id": root, "team": "a"}
    assert run.root_run_id == root
    assert world.runs.get(create_run(world)).root_run_id != root


def test_mutating_a_returned_run_does_not_change_the_store(world: World) -> None:
    run_id = create_run(world, attributes={"k": "v"})
    world.runs.get(run_id).attributes["k"] = "changed"
    assert world.runs.get(run_id).attributes == {"k": "v"}


def test_runs_list_is_newest_first_and_pages_with_a_cursor(world: World, clock: ManualClock) -> None:
    # GIVEN five runs created one second apart
    workflow = new_id("wf")
    made = []
    for _ in range(5):
        made.append(create_run(world, workflow_name=workflow))
        clock.advance(1)
    # WHEN listed two at a time
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        page = world.runs.list(workflow_name=workflow, limit=2, cursor=cursor)
        assert len(page.runs) <= 2
        seen.extend(run.run_id for run in page.runs)
        cursor = page.cursor
        if cursor is None:
            break
    # THEN every run appears once, newest first
    assert seen == list(reversed(made))


def test_runs_list_orders_runs_created_at_one_instant_by_id(world: World, clock: ManualClock) -> None:
    # GIVEN three runs created at the same instant, whose ids do not sort in creation
    # order (client-minted ids, concurrent starts), and one created a second later
    workflow = new_id("wf")
    tied = [f"wrun_{prefix}_{new_id('x')}" for prefix in ("m", "z", "a")]
    for run_id in tied:
        write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation(workflow_name=workflow)))
    clock.advance(1)
    later = create_run(world, workflow_name=workflow)
    expected = [later, *sorted(tied, reverse=True)]
    # WHEN they are listed whole, and a page of one at a time
    whole = [run.run_id for run in world.runs.list(workflow_name=workflow).runs]
    paged: list[str] = []
    cursor = None
    for _ in range(10):
        page = world.runs.list(workflow_name=workflow, limit=1, cursor=cursor)
        paged.extend(run.run_id for run in page.runs)
        cursor = page.cursor
        if cursor is None:
            break
    # THEN both list newest first, runs of one instant by id (descending), every run once
    assert whole == expected
    assert paged == expected


def test_runs_list_filters_by_status_and_workflow_name(world: World) -> None:
    workflow, other = new_id("wf"), new_id("wf")
    running = create_run(world, workflow_name=workflow)
    done = create_run(world, workflow_name=workflow)
    end_run(world, done)
    create_run(world, workflow_name=other)
    assert {r.run_id for r in world.runs.list(workflow_name=workflow).runs} == {running, done}
    completed = world.runs.list(workflow_name=workflow, status=RunStatus.COMPLETED).runs
    assert [r.run_id for r in completed] == [done]
    assert world.runs.list(workflow_name=new_id("wf")).runs == []


# ----------------------------------------------------------------------------- continuation claims


def _completed(world: World, run_id: str, step_id: str) -> int:
    """Complete a running step; the position of its outcome."""
    result = write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"ok"))
    assert result.event is not None
    return result.event.position


def test_claim_continuation_goes_to_one_completer_of_a_wave(world: World) -> None:
    # GIVEN a wave of three steps, all finished
    run_id = create_run(world)
    steps = [running_step(world, run_id) for _ in range(3)]
    positions = [_completed(world, run_id, s) for s in steps]
    # WHEN each completer claims the continuation with its own outcome
    first = world.runs.claim_continuation(run_id, after=positions[1], claimer=steps[1])
    others = [world.runs.claim_continuation(run_id, after=positions[i], claimer=steps[i]) for i in (0, 2)]
    # THEN the first claim gets the run, the later ones of the same wave get nothing
    assert first is not None and first.run_id == run_id and first.status is RunStatus.RUNNING
    # (a World may leave the input out of a claimed run: the DynamoDB World keeps it apart)
    assert first.input in (None, world.runs.get(run_id).input)
    assert others == [None, None]


def test_claim_continuation_is_repeatable_by_its_claimer_and_open_to_the_next_wave(world: World) -> None:
    run_id = create_run(world)
    step = running_step(world, run_id)
    position = _completed(world, run_id, step)
    assert world.runs.claim_continuation(run_id, after=position, claimer=step) is not None
    # A redelivery of the same completer claims again (its first delivery may have died)
    assert world.runs.claim_continuation(run_id, after=position, claimer=step) is not None
    # The next wave's outcome comes after the claim: its completer wins
    later = running_step(world, run_id)
    later_position = _completed(world, run_id, later)
    assert world.runs.claim_continuation(run_id, after=later_position, claimer=later) is not None
    # and the first wave's completer is now covered by that claim
    assert world.runs.claim_continuation(run_id, after=position, claimer=step) is None


def test_claim_continuation_of_a_terminal_run_returns_it_terminal(world: World) -> None:
    run_id = create_run(world)
    step = running_step(world, run_id)
    end_run(world, run_id)
    position = _completed(world, run_id, step)
    run = world.runs.claim_continuation(run_id, after=position, claimer=step)
    assert run is not None and run.status is RunStatus.COMPLETED


def test_claim_continuation_of_a_missing_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.runs.claim_continuation(new_id("wrun"), after=1, claimer="step_x")


def test_list_with_run_is_the_run_without_payloads_and_its_log(world: World) -> None:
    # GIVEN a running run with a step
    run_id = create_run(world, input=b"the-input", attributes={"k": "v"})
    running_step(world, run_id)
    # WHEN it is read with its log, whole and after its first event
    whole = world.events.list_with_run(run_id)
    later = world.events.list_with_run(run_id, after=1)
    # THEN the run is the one runs.get shows without payloads, and the log is list's
    assert whole.run == world.runs.get(run_id, resolve_data=ResolveData.NONE)
    assert whole.run.status is RunStatus.RUNNING and whole.run.attributes == {"k": "v"}
    assert whole.events == world.events.list(run_id)
    assert later.events == world.events.list(run_id, after=1)
    assert later.events is not None and later.events[0].position == 2


def test_list_with_run_of_a_pending_run_holds_its_creation(world: World) -> None:
    # GIVEN a pending run
    run_id = create_run(world, started=False)
    # WHEN it is read with its log
    log = world.events.list_with_run(run_id)
    # THEN it is pending and its log is run_created, with the input unless asked without
    assert log.run.status is RunStatus.PENDING
    assert log.events is not None and [e.type for e in log.events] == [EventType.RUN_CREATED]
    creation_data = log.events[0].data_as(RunCreatedData).creation
    assert creation_data is not None and creation_data.input == b"run-input"
    bare = world.events.list_with_run(run_id, resolve_data=ResolveData.NONE)
    assert bare.events == world.events.list(run_id, resolve_data=ResolveData.NONE)


def test_list_with_run_of_an_ended_run_reads_no_log(world: World) -> None:
    for how in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
        # GIVEN a run that ended
        run_id = create_run(world)
        end_run(world, run_id, how)
        # WHEN it is read with its log
        log = world.events.list_with_run(run_id)
        # THEN the run shows its end and no log comes with it
        assert log.run.status.terminal and log.events is None, how
        assert log.run == world.runs.get(run_id, resolve_data=ResolveData.NONE), how


def test_list_with_run_of_a_missing_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.events.list_with_run(new_id("wrun"))
