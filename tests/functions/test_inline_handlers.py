"""The workflow function runs ready steps inline (issue 12), within the invocation's remaining time."""

from __future__ import annotations

from typing import Any

import pytest
from lambda_support import Context, receive

from functions import workflow_handler
from infra.events.make_events import RUN_ID
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.world import AwsWorld
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import StepStatus
from world_aws.contract.transport import decode_body
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws

SampleEvent = Any


def statuses(world: AwsWorld) -> dict[str, list[StepStatus]]:
    by_name: dict[str, list[StepStatus]] = {}
    for step in world.steps.list(RUN_ID):
        by_name.setdefault(step.step_name.rsplit(".", 1)[-1], []).append(step.status)
    return by_name


@pytest.mark.usefixtures("deployed")
def test_workflow_event_runs_ready_steps_inline_until_a_retry_goes_by_message(
    sample_event: SampleEvent, world: AwsWorld, embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN the sample workflow event (checkout: validate, 3 reserves, charge, ship) and a
    # Lambda with its full 150 s ahead
    event = sample_event("sqs_workflow_event.json")
    # WHEN the workflow function handles it
    response = workflow_handler.handler(event, Context())
    # THEN validate and the 3-way fan-out of reserve ran in this invocation; charge's first
    # attempt failed (retryable) and its next attempt waits on the step queue
    assert response == {"batchItemFailures": []}
    assert statuses(world) == {
        "validate": [StepStatus.COMPLETED],
        "reserve": [StepStatus.COMPLETED] * 3,
        "charge": [StepStatus.PENDING],
    }
    attributes = embedded.clients.sqs.get_queue_attributes(
        QueueUrl=resources.queues[QueueName.STEP].url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    assert (attributes["ApproximateNumberOfMessages"], attributes["ApproximateNumberOfMessagesDelayed"]) == (
        "0",
        "1",
    )


@pytest.mark.usefixtures("deployed")
def test_too_little_remaining_time_hands_the_first_step_on_by_message(
    sample_event: SampleEvent, world: AwsWorld, embedded: EmbeddedAws, resources: ProvisionedResources
) -> None:
    # GIVEN an invocation with 5 s left, under the 10 s margin (WORKFLOW_INLINE_MARGIN_SECONDS)
    context = Context()
    context.remaining_ms = 5_000
    # WHEN the workflow function handles the sample workflow event
    response = workflow_handler.handler(sample_event("sqs_workflow_event.json"), context)
    # THEN no step ran here: the first one is created and its message is on the step queue
    assert response == {"batchItemFailures": []}
    assert statuses(world) == {"validate": [StepStatus.PENDING]}
    (record,) = receive(embedded, resources, QueueName.STEP)["Records"]
    payload = decode_body(record["body"])
    assert isinstance(payload, InvokePayload) and str(payload.step_name).endswith("validate")
