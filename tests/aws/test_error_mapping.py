"""No botocore exception leaves the AWS World: throttling is Throttled, else Transient (contract §3, §7.2).

Failures are injected with botocore event hooks on the World's own clients; the
assertions read the state back through the contract: nothing half-written remains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from harness.fake_time import FakeMonotonic
from world_aws.aws.codec import keys
from world_aws.aws.config import AwsConfig
from world_aws.aws.world import AwsWorld
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.records import EventType, ResolveData
from world_aws.errors import BadInput, Throttled, Transient
from world_aws.testing.conformance.support import create_run, create_step, new_id, write


def _client_error(code: str, operation: str, **extra: Any) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": "injected"}, **extra}
    return ClientError(response, operation)


@contextmanager
def failing(client: Any, event: str, make_error: Callable[[], Exception]) -> Iterator[list[str]]:
    """Make every call matching ``event`` on ``client`` raise ``make_error()``."""
    hits: list[str] = []

    def fail(**kwargs: Any) -> None:
        hits.append(str(kwargs.get("event_name")))
        raise make_error()

    client.meta.events.register(event, fail)
    try:
        yield hits
    finally:
        client.meta.events.unregister(event, fail)


def _assert_log_has_no(world: AwsWorld, run_id: str, etype: EventType) -> None:
    assert etype not in [e.type for e in world.events.list(run_id)]


def test_throttled_commit_is_throttled_and_leaves_no_step_and_no_hole(world: AwsWorld) -> None:
    # GIVEN a running run, and DynamoDB throttling every transaction
    run_id = create_run(world)
    step_id = new_id("step")
    ddb = world.clients.dynamodb
    error = _client_error("ProvisionedThroughputExceededException", "TransactWriteItems")
    # WHEN a step is created
    with (
        failing(ddb, "before-call.dynamodb.TransactWriteItems", lambda: error) as hits,
        pytest.raises(Throttled) as raised,
    ):
        create_step(world, run_id, step_id=step_id)
    # THEN the error is Throttled with a retry-after, and nothing of the step was written
    assert hits and raised.value.retry_after > 0
    assert world.steps.list(run_id) == []
    _assert_log_has_no(world, run_id, EventType.STEP_CREATED)
    # ... its reserved position was sealed, so the next write lands right after it, readable at once
    create_step(world, run_id, step_id=step_id)
    assert [e.position for e in world.events.list(run_id)] == [1, 2, 4]


def test_failed_reservation_is_transient_and_takes_no_position(world: AwsWorld) -> None:
    # GIVEN a running run, and DynamoDB failing every UpdateItem with a server error
    run_id = create_run(world)
    error = _client_error("InternalServerError", "UpdateItem")
    # WHEN a step is created
    with (
        failing(world.clients.dynamodb, "before-call.dynamodb.UpdateItem", lambda: error),
        pytest.raises(Transient),
    ):
        create_step(world, run_id)
    # THEN the run's sequence did not move and nothing was written
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None and run_item["seq"] == 2
    assert world.steps.list(run_id) == []


def test_transaction_conflicts_are_retried_then_transient(world: AwsWorld) -> None:
    # GIVEN a running run, and every transaction cancelled by a conflicting write in flight
    run_id = create_run(world)
    error = _client_error(
        "TransactionCanceledException",
        "TransactWriteItems",
        CancellationReasons=[{"Code": "None"}, {"Code": "TransactionConflict", "Message": "in flight"}],
    )
    # WHEN a step is created
    with (
        failing(world.clients.dynamodb, "before-call.dynamodb.TransactWriteItems", lambda: error) as hits,
        pytest.raises(Transient),
    ):
        create_step(world, run_id)
    # THEN the World retried a bounded number of times, then gave up cleanly
    assert 1 < len(hits) <= 10
    assert world.steps.list(run_id) == []
    _assert_log_has_no(world, run_id, EventType.STEP_CREATED)


def test_throttled_s3_put_is_throttled_and_takes_no_position(
    world: AwsWorld, fake_time: FakeMonotonic
) -> None:
    # GIVEN a running run, and S3 slowing down every put
    run_id = create_run(world)
    big = b"\x01" * (MAX_INLINE_PAYLOAD_BYTES + 1)
    slow_down = _client_error("SlowDown", "PutObject")
    # WHEN a step with a large input is created
    with failing(world.clients.s3, "before-call.s3.PutObject", lambda: slow_down), pytest.raises(Throttled):
        create_step(world, run_id, input=big)
    # THEN neither the step nor its event exists: the blob is put before a position is taken ...
    assert world.steps.list(run_id) == []
    _assert_log_has_no(world, run_id, EventType.STEP_CREATED)
    # ... so the next write takes the very next position and no reader waits for a hole
    step_id = create_step(world, run_id, input=big)
    assert [(e.position, e.correlation_id) for e in world.events.list(run_id)][2:] == [(3, step_id)]
    assert fake_time.now == 0


def test_network_failures_on_reads_are_transient(world: AwsWorld) -> None:
    # GIVEN a run, and the network to DynamoDB down
    run_id = create_run(world)

    def unreachable() -> Exception:
        return EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    with failing(world.clients.dynamodb, "before-call.dynamodb.*", unreachable):
        # WHEN the run, its log and the run list are read
        # THEN each read fails with Transient (never a botocore exception)
        with pytest.raises(Transient):
            world.runs.get(run_id)
        with pytest.raises(Transient):
            world.events.list(run_id)
        with pytest.raises(Transient):
            world.runs.list()
        with pytest.raises(Transient):
            write(world, run_id, EventType.RUN_COMPLETED)


@pytest.mark.parametrize(
    ("operation", "resolve_data"), [("BatchGetItem", ResolveData.ALL), ("GetItem", ResolveData.NONE)]
)
def test_throttled_reads_are_throttled(world: AwsWorld, operation: str, resolve_data: ResolveData) -> None:
    # (a run read with its data is one BatchGetItem of the run item and its run_created event)
    run_id = create_run(world)
    error = _client_error("ThrottlingException", operation)
    with (
        failing(world.clients.dynamodb, f"before-call.dynamodb.{operation}", lambda: error),
        pytest.raises(Throttled),
    ):
        world.runs.get(run_id, resolve_data=resolve_data)


def test_config_from_env_names_the_missing_variable() -> None:
    env = {
        "WORKFLOW_TABLE_NAME": "t",
        "WORKFLOW_QUEUE_URL": "https://q/w",
        "STEP_QUEUE_URL": "https://q/s",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    with pytest.raises(BadInput, match="WORKFLOW_PAYLOAD_BUCKET"):
        AwsConfig.from_env(env)
    config = AwsConfig.from_env({**env, "WORKFLOW_PAYLOAD_BUCKET": "b"})
    assert (config.region, config.deployment_id, config.endpoint_url) == ("eu-west-1", "dpl_local", None)
