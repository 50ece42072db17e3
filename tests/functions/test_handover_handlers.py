"""The Lambda side of pinning: a version answers a hand-over, and the container wires the hand-over.

A newer version of the workflow function hands a delivery for a run pinned to an
older one to that version (``world_aws/aws/versions.py``): the older version's
handler takes the hand-over event and answers with the delivery's outcome, here
through the real handlers against moto.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from lambda_support import CONTEXT

from functions import step_handler, workflow_handler
from functions._container import PROCESS
from world_aws.aws.versions import LambdaDeployments, LambdaHandover, handover_event
from world_aws.aws.world import AwsWorld
from world_aws.contract.payload import HealthCheck
from world_aws.contract.records import RunStatus
from world_aws.contract.transport import decode_body_bytes, encode_payload
from world_aws.contract.world import Delivery, QueueName

SampleEvent = Callable[[str], dict[str, Any]]


def _delayed(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"])


def _delivery(event: dict[str, Any], queue: QueueName) -> Delivery:
    (record,) = event["Records"]
    return Delivery(
        queue=queue, message_id=record["messageId"], attempt=1, body=decode_body_bytes(record["body"])
    )


@pytest.mark.usefixtures("deployed")
def test_a_version_answers_a_hand_over_with_the_deliverys_outcome(
    sample_event: SampleEvent, world: AwsWorld
) -> None:
    # GIVEN the first message of a new run, handed over by a newer version
    delivery = _delivery(sample_event("sqs_workflow_event.json"), QueueName.WORKFLOW)
    # WHEN this version's workflow handler takes the hand-over event
    answer = workflow_handler.handler(handover_event(delivery), CONTEXT)
    # THEN it handled the delivery (the run started) and answered with its outcome
    assert answer == {"result": "ack"}
    (run,) = world.runs.list().runs
    assert run.status is RunStatus.RUNNING
    # AND the same delivery again, before the first one's inline steps are done, is answered
    # with its outcome too: acked, having left a wake-up of the run due when the first
    # handling's inline lease ends (worker/inline.py, InlineSteps.hold)
    sqs, url = world.clients.sqs, world.queue_urls()[QueueName.WORKFLOW]
    delayed_before = _delayed(sqs, url)
    assert workflow_handler.handler(handover_event(delivery), CONTEXT)["result"] == "ack"
    assert _delayed(sqs, url) == delayed_before + 1
    # AND the step handler takes a hand-over too (a step of a pinned run goes to its version)
    health = Delivery(
        QueueName.STEP, "m-health", 1, encode_payload(HealthCheck(health_check=True, correlation_id="c"))
    )
    assert step_handler.handler(handover_event(health), CONTEXT) == {"result": "ack"}


def test_on_a_published_version_the_container_hands_over_and_lists_versions(
    deploy: Callable[..., None],
) -> None:
    # GIVEN the workflow function's environment as Lambda sets it on version 3
    deploy(AWS_LAMBDA_FUNCTION_NAME="world-aws-workflow", AWS_LAMBDA_FUNCTION_VERSION="3")
    container = PROCESS.built()
    # THEN its runs start on deployment 3, and it hands over to the function's other versions
    assert container.world.deployment_id() == "3"
    assert isinstance(container.runtime.handover, LambdaHandover)
    assert isinstance(container.runtime.deployments, LambdaDeployments)


def test_unversioned_the_container_runs_every_delivery_itself(deploy: Callable[..., None]) -> None:
    # GIVEN $LATEST (no version published): no hand-over, one deployment
    deploy(AWS_LAMBDA_FUNCTION_NAME="world-aws-workflow", AWS_LAMBDA_FUNCTION_VERSION="$LATEST")
    container = PROCESS.built()
    assert container.runtime.handover is None
    assert [d.deployment_id for d in container.runtime.deployments.list()] == ["dpl_local"]
