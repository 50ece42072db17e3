"""Golden event log: a stored race run replays to its recorded outcome; reordered code is rejected.

``golden/race_run.json`` is the complete log of one run of ``apps.race_app`` (a
fetch, a FIRST_COMPLETED race of two quotes, a booking), recorded with quote_b
delivered first: the log's winner is the quote the code calls second, so only
replay in log order reaches the recorded result. Regenerate it, only
when the workflow changes on purpose, with::

    WORLD_AWS_UPDATE_GOLDEN=1 python -m pytest tests/runtime/test_golden.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.harness import Harness
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import Event, EventType, Run, RunStatus
from world_aws.contract.transport import decode_payload
from world_aws.contract.world import Delivery, HandlerResult, MessageHandler, Redeliver
from world_aws.engine.replay import ERROR_CODE_NON_DETERMINISM, Completed, Failed
from world_aws.serde.codec import decode_error

from .apps import RACE_QUOTES, race_app
from .golden import GOLDEN_DIR, load_log, replay, save_log

RACE_LOG = GOLDEN_DIR / "race_run.json"
UPDATE_ENV = "WORLD_AWS_UPDATE_GOLDEN"


def record_race_log(harness: Harness, path: Path) -> None:
    """Run the race with quote_b delivered first, so the log's winner is not the first call."""
    runtime = harness.runtime_for(race_app())
    handle = runtime.start("race", "golden-order")

    def b_first(delivery: Delivery, handle_message: MessageHandler) -> HandlerResult:
        payload = decode_payload(delivery.body)
        held_back = isinstance(payload, InvokePayload) and payload.step_name == "race.quote_a"
        if held_back and "race.quote_b" not in completed_steps(harness.events(handle.run_id)):
            return Redeliver(0)  # back of the queue, after quote_b
        return handle_message(delivery)

    assert harness.settle(handle, intercept=b_first) is RunStatus.COMPLETED
    save_log(path, harness.world.runs.get(handle.run_id), harness.events(handle.run_id))


def completed_steps(events: list[Event]) -> set[str | None]:
    names = {e.correlation_id: e.data.step_name for e in events if e.type is EventType.STEP_CREATED}
    return {names[e.correlation_id] for e in events if e.type is EventType.STEP_COMPLETED}


@pytest.fixture
def golden_race(memory_harness: Harness) -> tuple[Run, list[Event]]:
    if os.environ.get(UPDATE_ENV) == "1":
        record_race_log(memory_harness, RACE_LOG)
    return load_log(RACE_LOG)


def test_golden_race_log_replays_to_its_recorded_outcome(golden_race: tuple[Run, list[Event]]) -> None:
    # GIVEN the stored log of a completed race run
    run, events = golden_race
    recorded = next(e for e in events if e.type is EventType.RUN_COMPLETED).data.output
    # WHEN today's code replays it, whole or one event at a time
    app = race_app()
    outcomes = [replay(app, run, events, one_by_one=flag) for flag in (False, True)]
    # THEN it reaches the recorded result byte for byte, with the logged race winner
    for outcome in outcomes:
        assert isinstance(outcome, Completed)
        assert outcome.output == recorded
    names = {e.correlation_id: e.data.step_name for e in events if e.type is EventType.STEP_CREATED}
    first_quote = next(
        names[e.correlation_id]
        for e in events
        if e.type is EventType.STEP_COMPLETED and names[e.correlation_id] in RACE_QUOTES
    )
    winner = app.serializer.loads(recorded or b"")["winner"]
    assert first_quote == f"race.quote_{winner.lower()}" == "race.quote_b"


def test_golden_race_log_rejects_code_that_calls_its_steps_in_another_order(
    golden_race: tuple[Run, list[Event]],
) -> None:
    # GIVEN the stored log, and the workflow changed to call quote_b before quote_a
    run, events = golden_race
    changed = race_app(quote_b_first=True)
    # WHEN the changed code replays the log
    outcome = replay(changed, run, events)
    # THEN the replay fails as non-deterministic, naming the logged and the called step
    assert isinstance(outcome, Failed)
    assert outcome.error_code == ERROR_CODE_NON_DETERMINISM
    info = decode_error(outcome.error)
    assert info.type.endswith("NonDeterminismError")
    assert "'race.quote_a'" in info.message
    assert "'race.quote_b'" in info.message


def test_golden_race_log_is_a_complete_dense_log() -> None:
    # GIVEN the stored fixture WHEN it is loaded THEN its positions are dense and it ends completed
    _run, events = load_log(RACE_LOG)
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    assert events[0].type is EventType.RUN_CREATED
    assert events[-1].type is EventType.RUN_COMPLETED
    assert sum(e.type is EventType.STEP_COMPLETED for e in events) == 4
