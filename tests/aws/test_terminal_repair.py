"""Issue 11, mechanism 3: a run that ended without its terminal event in the log gets it back.

The end of a run is its reservation (status and position in one UpdateItem); the
event put and the hook release follow. Here the put never lands (the writer's
connection fails on every try, as when it dies after the reservation), so the
run reads ``completed`` with no ``run_completed``. The next transition refused
by the terminal status (a redelivered continuation's ``run_started`` or second
``run_completed``) must put the rebuilt event and release the hooks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    EventType,
    RunCancelledData,
    RunCompletedData,
    RunStartedData,
    RunStatus,
)
from world_aws.errors import Conflict, NotFound, WorldAwsError
from world_aws.testing.conformance.support import create_hook, create_run, new_id, types_of, write


@contextmanager
def event_puts_fail(world: AwsWorld, etype: EventType) -> Iterator[None]:
    """Every PutItem of an event of ``etype`` fails to connect while inside the block."""

    def refuse(params: dict[str, Any], **_: Any) -> None:
        item = params.get("Item", {})
        if item.get("type", {}).get("S") == etype.value and "evt#" in item.get("sk", {}).get("S", ""):
            raise EndpointConnectionError(endpoint_url="https://dynamodb.invalid")

    events = world.clients.dynamodb.meta.events
    events.register("before-parameter-build.dynamodb.PutItem", refuse)
    try:
        yield
    finally:
        events.unregister("before-parameter-build.dynamodb.PutItem", refuse)


@pytest.mark.parametrize(
    "second",
    [EventType.RUN_STARTED, EventType.RUN_COMPLETED, EventType.RUN_CANCELLED],
    ids=["redelivered_start", "second_completion", "late_cancel"],
)
def test_a_refused_transition_puts_the_missing_terminal_event_and_releases_hooks(
    world: AwsWorld, second: EventType
) -> None:
    # GIVEN a running run with a live hook, whose run_completed reserved its position
    # but whose event put never landed
    run_id = create_run(world)
    token = new_id("tok")
    create_hook(world, run_id, token)
    with event_puts_fail(world, EventType.RUN_COMPLETED), pytest.raises(WorldAwsError):
        write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"the-output"))
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None and run_item["status"] == RunStatus.COMPLETED.value
    final_position = int(run_item["rev_final_pos"])
    assert world.table.get(keys.event_key(run_id, final_position)) is None
    # WHEN a later transition of the run is refused because it ended
    data = {
        EventType.RUN_STARTED: RunStartedData(),
        EventType.RUN_COMPLETED: RunCompletedData(output=b"x"),
        EventType.RUN_CANCELLED: RunCancelledData(reason="late"),
    }[second]
    with pytest.raises(Conflict):
        write(world, run_id, second, data=data)
    # THEN the log has exactly one run_completed, at the reserved position, with its output
    events = world.events.list(run_id)
    finals = [e for e in events if e.type is EventType.RUN_COMPLETED]
    assert len(finals) == 1
    assert finals[0].position == final_position and finals[0].data.output == b"the-output"
    assert types_of(world, run_id)[-1] is EventType.RUN_COMPLETED
    # AND the hook's token was released with the run's end
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)


def test_a_refused_transition_of_a_whole_terminal_run_changes_nothing(world: AwsWorld) -> None:
    # GIVEN a run that completed normally
    run_id = create_run(world)
    write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"done"))
    before = world.events.list(run_id)
    # WHEN its continuation is redelivered
    with pytest.raises(Conflict):
        write(world, run_id, EventType.RUN_STARTED)
    # THEN its log is as it was
    assert world.events.list(run_id) == before
