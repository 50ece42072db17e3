"""The run item is the same size whatever the run's input (ARCHITECTURE §8).

Every event's reservation and every continuation claim rewrite the run item, and
DynamoDB bills a write by the larger of the item's two images: so the input is
kept once, in the ``run_created`` event, and ``runs.get`` reads both items in
one ``BatchGetItem``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from bench.billing import item_size
from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import (
    EventRequest,
    EventType,
    ResolveData,
    RunCompletedData,
    StepCompletedData,
)
from world_aws.testing.conformance.appended import OWNER, owned_create
from world_aws.testing.conformance.support import create_run, new_id, running_step, write

INPUTS = {
    "empty": b"",
    "1-kb": b"\x01" * 1_000,
    "60-kb": b"\x02" * 60_000,
    "200-kb-in-s3": b"\x03" * 200_000,
}


def _run_item_size(world: AwsWorld, run_id: str) -> int:
    """The stored run item's size by DynamoDB's billing rules (names plus values)."""
    raw = world.clients.dynamodb.get_item(
        TableName=world.config.table_name, Key={"pk": {"S": keys.run_pk(run_id)}, "sk": {"S": keys.RUN_SK}}
    )
    return item_size(raw["Item"])


@contextmanager
def dynamodb_calls(world: AwsWorld) -> Iterator[list[str]]:
    calls: list[str] = []

    def count(event_name: str, **_: Any) -> None:
        calls.append(event_name.rsplit(".", 1)[-1])

    world.clients.dynamodb.meta.events.register("before-call.dynamodb.*", count)
    try:
        yield calls
    finally:
        world.clients.dynamodb.meta.events.unregister("before-call.dynamodb.*", count)


def _run_with_a_finished_step(world: AwsWorld, run_input: bytes) -> str:
    """A running run with one step completed and its continuation claimed.

    Started as the runtime starts it, by an ``append_after``: that first append replaces
    the run item's ``tail``, which until then may hold ``run_created`` (§8 "The tail").
    """
    run_id = create_run(world, input=run_input, started=False)
    step_id = new_id("step")
    first = [EventRequest(EventType.RUN_STARTED), owned_create(step_id)]
    assert world.events.append_after(run_id, 1, first, at=world.clock.now()) is not None
    done = write(
        world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out", owner=OWNER)
    )
    assert done.event is not None
    assert world.runs.claim_continuation(run_id, after=done.event.position, claimer=step_id) is not None
    return run_id


def test_the_run_item_is_the_same_small_size_whatever_the_input(world: AwsWorld) -> None:
    # GIVEN runs whose inputs go from empty to 200 KB, each through a step and a continuation claim
    runs = {name: _run_with_a_finished_step(world, data) for name, data in INPUTS.items()}
    # WHEN their run items are measured as DynamoDB bills them
    sizes = {name: _run_item_size(world, run_id) for name, run_id in runs.items()}
    # THEN every one has the same size, under the 1 KB of one write unit
    assert len(set(sizes.values())) == 1, sizes
    assert sizes["empty"] < 1024, sizes
    # ... and every input still reads back whole
    assert {name: world.runs.get(run_id).input for name, run_id in runs.items()} == INPUTS


def test_a_run_written_one_event_at_a_time_keeps_its_creation_tail_within_one_write_unit(
    world: AwsWorld,
) -> None:
    # GIVEN runs created as a tail, then written one event at a time (no append replaces it)
    runs = {name: create_run(world, input=data) for name, data in INPUTS.items()}
    for run_id in runs.values():
        running_step(world, run_id)
    # WHEN their run items are measured as DynamoDB bills them
    sizes = {name: _run_item_size(world, run_id) for name, run_id in runs.items()}
    # THEN each still fits one write unit: a creation that would not commits in a transaction
    assert all(size <= 1024 for size in sizes.values()), sizes
    assert {name: world.runs.get(run_id).input for name, run_id in runs.items()} == INPUTS


@pytest.mark.parametrize("name", ["1-kb", "200-kb-in-s3"])
def test_a_run_read_with_its_data_is_one_batch_get_and_without_it_one_get(world: AwsWorld, name: str) -> None:
    # GIVEN a run with an input
    run_id = create_run(world, input=INPUTS[name])
    # WHEN it is read with and without its data
    with dynamodb_calls(world) as with_data:
        full = world.runs.get(run_id)
    with dynamodb_calls(world) as without_data:
        bare = world.runs.get(run_id, resolve_data=ResolveData.NONE)
    # THEN the input comes in the same round trip as the run item (plus S3 for a referenced input)
    assert with_data == ["BatchGetItem"]
    assert full.input == INPUTS[name]
    assert without_data == ["GetItem"]
    assert bare.input is None


def test_claims_and_transitions_return_the_run_without_its_input_but_with_its_output(
    world: AwsWorld,
) -> None:
    # GIVEN a run with a 60 KB input and a finished step
    run_id = create_run(world, input=INPUTS["60-kb"])
    step_id = running_step(world, run_id)
    done = write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"out"))
    assert done.event is not None
    # WHEN its continuation is claimed and the run completes
    claimed = world.runs.claim_continuation(run_id, after=done.event.position, claimer=step_id)
    ended = write(world, run_id, EventType.RUN_COMPLETED, data=RunCompletedData(output=b"run-output"))
    # THEN neither read the input (None), the terminal one carries the output, and get has both
    assert claimed is not None and claimed.input is None and claimed.workflow_name == "wf_conformance"
    assert ended.run is not None and (ended.run.input, ended.run.output) == (None, b"run-output")
    run = world.runs.get(run_id)
    assert (run.input, run.output) == (INPUTS["60-kb"], b"run-output")


def test_runs_list_returns_each_run_with_its_input(world: AwsWorld) -> None:
    # GIVEN runs with different inputs, one of them large
    made = {create_run(world, input=data): data for data in (b"small", INPUTS["60-kb"], b"")}
    # WHEN the runs are listed
    listed = {run.run_id: run.input for run in world.runs.list(limit=10).runs if run.run_id in made}
    # THEN each comes with its own input
    assert listed == made
