"""The DynamoDB World's write path is a table: every event type a caller writes has its writer.

``DynamoEventStore.writers`` maps each type to its writer; a type missing from it is a
World bug and raises, instead of being sent to another type's writer (the if-chain it
replaced sent any unmatched type to ``wait_completed``).
"""

from __future__ import annotations

import pytest

from world_aws.aws.world import AwsWorld
from world_aws.contract import rules
from world_aws.contract.records import EventRequest, EventType, WaitCompletedData
from world_aws.errors import BadInput, WorldAwsError
from world_aws.testing.conformance.support import create_run


def test_every_event_type_a_caller_writes_has_a_writer(world: AwsWorld) -> None:
    # GIVEN the event types the contract lets callers write, and the World's own
    own = {t for t in EventType if t not in rules.CLIENT_EVENT_TYPES}
    # THEN the writer table covers exactly the callers' types
    assert set(world.events.writers) == set(rules.CLIENT_EVENT_TYPES)
    assert own == {EventType.HOOK_CONFLICT, EventType.NOOP}


def test_a_type_without_a_writer_raises_and_writes_nothing(world: AwsWorld) -> None:
    # GIVEN a run, and a writer table that lost wait_completed's writer (a future type, say)
    run_id = create_run(world)
    before = world.events.list(run_id)
    del world.events.writers[EventType.WAIT_COMPLETED]
    # WHEN that type is written
    with pytest.raises(WorldAwsError, match="no DynamoDB writer for event type 'wait_completed'"):
        world.events.create(run_id, EventRequest(EventType.WAIT_COMPLETED, "wait_1", WaitCompletedData()))
    # THEN nothing was appended
    assert world.events.list(run_id) == before


def test_a_world_only_type_is_refused_before_any_writer(world: AwsWorld) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput, match="written by the World only"):
        world.events.create(run_id, EventRequest(EventType.NOOP, "x"))
