"""Issue 5: concurrency inside a workflow — a wide gather, and a race decided by the log.

contract §3.2 / §8.3: replay delivers outcomes one event at a time in log order, so
``asyncio.wait(..., FIRST_COMPLETED)`` picks the step whose completion comes
first in the log, on the first run and on every replay after it.
"""

from __future__ import annotations

import asyncio

import pytest

from harness.harness import Harness
from world_aws import Workflows
from world_aws.contract.records import Event, EventType, ResolveData, RunStatus
from world_aws.engine.replay import Completed, Suspended

from .apps import RACE_QUOTES, race_app
from .golden import renumbered, replay, run_from_log

# The dispatched-step path (inline execution off): what these tests are about.
pytestmark = pytest.mark.dispatched

# moto's TransactWriteItems deep-copies the whole table for its rollback, so on the
# AWS World each step event costs more as the run grows: 50 branches take over a
# minute there. The AWS World runs the same path at a smaller width.
BRANCHES = {"memory": 50, "aws": 8}


def gather_app() -> Workflows:
    app = Workflows()

    @app.step
    def square(i: int) -> int:
        return i * i

    @app.workflow
    async def squares(n: int) -> list[int]:
        return list(await asyncio.gather(*(square(i) for i in range(n))))

    return app


def test_fifty_branch_gather_returns_every_result_in_call_order(harness: Harness) -> None:
    # GIVEN a workflow that gathers 50 steps
    branches = BRANCHES[harness.kind]
    runtime = harness.runtime_for(gather_app())
    # WHEN it runs
    handle = runtime.start("squares", branches)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN the results come back in call order, each step created and completed once
    assert handle.result(timeout=0) == [i * i for i in range(branches)]
    events = harness.events(handle.run_id, resolve_data=ResolveData.NONE)
    created = [str(e.correlation_id) for e in events if e.type is EventType.STEP_CREATED]
    completed = [str(e.correlation_id) for e in events if e.type is EventType.STEP_COMPLETED]
    assert len(created) == len(set(created)) == branches
    assert sorted(completed) == sorted(created)
    # AND every step was dispatched by the first pass: one workflow delivery started them all
    assert [d.attempt for d in harness.step_deliveries()] == [1] * branches


def quote_completions(events: list[Event]) -> list[str]:
    """The names of the race's quote steps in the order their completions are logged."""
    names = {e.correlation_id: e.data.step_name for e in events if e.type is EventType.STEP_CREATED}
    return [
        str(names[e.correlation_id])
        for e in events
        if e.type is EventType.STEP_COMPLETED and names[e.correlation_id] in RACE_QUOTES
    ]


def test_first_completed_race_picks_the_first_completion_in_the_log_on_every_replay(
    harness: Harness,
) -> None:
    # GIVEN a workflow that races two steps with asyncio.wait(FIRST_COMPLETED)
    app = race_app()
    runtime = harness.runtime_for(app)
    handle = runtime.start("race", "o-1")
    # WHEN it runs to the end (which quote is delivered first is up to the queue)
    assert harness.settle(handle) is RunStatus.COMPLETED
    events = harness.events(handle.run_id)
    first = quote_completions(events)[0]
    winner = "A" if first == "race.quote_a" else "B"
    # THEN the winner is the quote whose completion the log holds first
    assert handle.result(timeout=0) == {"winner": winner, "booking": f"booked with {winner}"}
    # AND replaying the stored log in fresh replays, whole or one event at a time, agrees
    run = harness.world.runs.get(handle.run_id)
    recorded = next(e for e in events if e.type is EventType.RUN_COMPLETED).data.output
    for one_by_one in (False, True, False):
        outcome = replay(race_app(), run, events, one_by_one=one_by_one)
        assert isinstance(outcome, Completed)
        assert outcome.output == recorded


def test_race_winner_follows_the_log_order_not_the_delivery_timing(memory_harness: Harness) -> None:
    # GIVEN the log of a race run, cut where both quotes completed and before the booking
    app = race_app()
    runtime = memory_harness.runtime_for(app)
    handle = runtime.start("race", "o-2")
    memory_harness.settle(handle)
    events = memory_harness.events(handle.run_id)
    run = run_from_log(handle.run_id, events)
    quote_ids = {
        e.correlation_id
        for e in events
        if e.type is EventType.STEP_CREATED and e.data.step_name in RACE_QUOTES
    }
    last_quote = max(
        i
        for i, e in enumerate(events)
        if e.type is EventType.STEP_COMPLETED and e.correlation_id in quote_ids
    )
    prefix = events[: last_quote + 1]
    first_id = next(
        e.correlation_id
        for e in prefix
        if e.type is EventType.STEP_COMPLETED and e.correlation_id in quote_ids
    )
    # AND the same log with the two quote completions swapped
    completions = [
        i
        for i, e in enumerate(prefix)
        if e.type is EventType.STEP_COMPLETED and e.correlation_id in quote_ids
    ]
    swapped = list(prefix)
    swapped[completions[0]], swapped[completions[1]] = prefix[completions[1]], prefix[completions[0]]
    # WHEN each is replayed
    outcomes = [replay(app, run, log) for log in (prefix, renumbered(swapped))]
    # THEN each books the quote that completed first in *its* log
    booked = []
    for outcome in outcomes:
        assert isinstance(outcome, Suspended)
        [book] = outcome.new_steps
        assert book.step_name == "race.book"
        booked.append(app.serializer.loads(book.input)["args"][0])
    names = {e.correlation_id: e.data.step_name for e in prefix if e.type is EventType.STEP_CREATED}
    expected_first = "A" if names[first_id] == "race.quote_a" else "B"
    assert booked == [expected_first, "B" if expected_first == "A" else "A"]
