"""Issue 15 item 3: the run and step counts are also emitted per workflow (EMF dimension ``workflow``).

The name comes from what the invocation holds anyway: the first message's
``run_input``, a step message's ``run_context``, the run an event returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from lambda_support import CONTEXT, metrics_by_workflow, receive

from functions import api_handler, step_handler, workflow_handler
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import decode_body
from world_aws.contract.world import QueueName
from world_aws.local.embedded import EmbeddedAws

SampleEvent = Callable[[str], dict[str, Any]]


@pytest.mark.usefixtures("deployed")
def test_run_and_step_counts_are_also_counted_under_their_workflow(
    sample_event: SampleEvent,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # GIVEN the first message of a run of checkout, handled by the workflow function
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }
    started = metrics_by_workflow(capsys.readouterr().out)
    # THEN its start is counted in the totals and under checkout; deliveries only in the totals
    assert started[None]["RunsStarted"] == 1 and started[None]["Deliveries"] == 1
    assert started["checkout"] == {"RunsStarted": 1}
    # WHEN the step function runs the dispatched step (its message names the workflow)
    event = receive(embedded, resources, QueueName.STEP)
    payload = decode_body(event["Records"][0]["body"])
    assert isinstance(payload, InvokePayload) and payload.run_context is not None
    assert payload.run_context.workflow_name == "checkout"
    assert step_handler.handler(event, CONTEXT) == {"batchItemFailures": []}
    # THEN the step's start and completion are counted under checkout too, equal to the totals
    ran = metrics_by_workflow(capsys.readouterr().out)
    assert ran["checkout"] == {"StepsStarted": 1, "StepsCompleted": 1}
    assert (ran[None]["StepsStarted"], ran[None]["StepsCompleted"]) == (1, 1)


@pytest.mark.usefixtures("deployed")
def test_a_run_created_through_the_api_is_counted_under_its_workflow(
    sample_event: SampleEvent, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN the API function starts a run of checkout
    response = api_handler.handler(sample_event("http_start_run_event.json"), CONTEXT)
    assert response["statusCode"] == 201 and json.loads(response["body"])["run_id"]
    # THEN RunsCreated is counted in the totals and under checkout
    counted = metrics_by_workflow(capsys.readouterr().out)
    assert counted[None]["RunsCreated"] == 1 and counted[None]["ApiRequests"] == 1
    assert counted["checkout"] == {"RunsCreated": 1}
