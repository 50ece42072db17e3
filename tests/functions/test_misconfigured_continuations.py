"""A misconfiguration met in a last completer's continuation: counted, and held for the visibility timeout.

With inline execution on (the template's default), the step function continues the
run of the step it finished. A missing resource or refused access met there must be
handled as everywhere else (``lambda_sqs``): one error line naming the resource, the
``Misconfigurations`` metric (``MisconfigurationAlarm``), and the message back only after
the queue's visibility timeout, so that the delivery cap (``WORKFLOW_MAX_QUEUE_DELIVERIES``,
48) leaves the operator the 12 h that 48 x 900 s gives, not a minute or two.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, cast

import pytest
from lambda_support import CONTEXT, access_denied, metrics, receive
from napping_app import app as napping_app

from functions import step_handler, workflow_handler
from functions._container import PROCESS
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import RunStatus, StepStatus, WaitStatus
from world_aws.contract.world import QueueName, World
from world_aws.local.embedded import EmbeddedAws
from world_aws.runtime.runtime import Runtime


def step_message(embedded: EmbeddedAws, resources: ProvisionedResources) -> dict[str, Any]:
    """The event of the step queue's one message, once its delay is over (a few seconds at most)."""
    for _ in range(50):
        event = receive(embedded, resources, QueueName.STEP)
        if event["Records"]:
            return event
        time.sleep(0.1)
    raise AssertionError("no step message became visible")


def test_a_continuation_refused_a_publish_is_counted_and_waits_for_the_visibility_timeout(
    deploy: Callable[..., None],
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # GIVEN a run whose step failed its first attempt inline, its second waiting on the step queue
    deploy(WORKFLOW_APP="napping_app:app")
    starter = Runtime(cast(World, world), napping_app)
    try:
        run_id = starter.start("napping_app.nap", "rows").run_id
    finally:
        starter.close()
    assert workflow_handler.handler(receive(embedded, resources, QueueName.WORKFLOW), CONTEXT) == {
        "batchItemFailures": []
    }
    event = step_message(embedded, resources)
    capsys.readouterr()
    caplog.clear()
    # WHEN the step function runs that attempt with the publish of the run's wake-up refused
    # (its role lost sqs:SendMessage): the continuation after the step needs it for the sleep
    container = PROCESS.container.get()
    with access_denied(container.world.clients.sqs, "sqs.SendMessage"):
        response = step_handler.handler(event, CONTEXT)
    # THEN the record is reported for redelivery, with one error naming the queue, counted
    assert response == {"batchItemFailures": [{"itemIdentifier": event["Records"][0]["messageId"]}]}
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and hasattr(r, "resource")]
    workflow_queue = resources.queues[QueueName.WORKFLOW].url
    assert [getattr(r, "resource", None) for r in errors] == [f"queue {workflow_queue}"]
    assert metrics(capsys.readouterr().out).get("Misconfigurations") == 1
    # AND the message is not back a second later: it keeps the visibility timeout (60 s here),
    # where 1 s redeliveries brought it back 48 times in a minute or two, then failed the run
    time.sleep(1.5)
    assert receive(embedded, resources, QueueName.STEP)["Records"] == []
    # AND the step's outcome stands; once access is back, the redelivery continues the run
    assert world.steps.list(run_id)[0].status is StepStatus.COMPLETED
    event["Records"][0]["attributes"]["ApproximateReceiveCount"] = "2"
    assert step_handler.handler(event, CONTEXT) == {"batchItemFailures": []}
    assert world.runs.get(run_id).status is RunStatus.RUNNING
    assert [w.status for w in world.waits.list(run_id)] == [WaitStatus.WAITING]
