"""The deployed handlers with a wrong table, queue or bucket, or access denied: redelivered, never acked.

Each test deploys the functions with one name of the environment wrong (a typo,
as in a bad template parameter), delivers the sample events, and checks what an
operator sees: every delivery reported as a batch item failure, one error log
line naming the resource, the ``Misconfigurations`` metric; and that the run is
untouched, so redelivering the same message after the fix proceeds as if
nothing happened.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from lambda_support import CONTEXT, access_denied, metrics, receive, step_id_of

from functions import api_handler, reconciler_handler, scheduler_handler, step_handler, workflow_handler
from functions._container import PROCESS
from infra.events.make_events import RUN_ID
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.aws.world import AwsWorld
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunStatus, StepStatus
from world_aws.contract.transport import decode_body, encode_body
from world_aws.contract.world import QueueName
from world_aws.errors import BadInput, NotFound
from world_aws.local.embedded import EmbeddedAws
from world_aws.worker.worker import MISSING_RUN_DELIVERIES

SampleEvent = Callable[[str], dict[str, Any]]
Deploy = Callable[..., None]
TYPO_TABLE = "orders-workflow-tabel"


@dataclass
class Operator:
    """Deploys the functions and watches them: their error log records and their EMF metrics."""

    deploy_functions: Deploy
    capsys: pytest.CaptureFixture[str]
    caplog: pytest.LogCaptureFixture

    def deploy(self, **overrides: str) -> None:
        """A new deployment (environment names overridden); what is seen from here on counts."""
        self.deploy_functions(**overrides)
        self.clear()

    def clear(self) -> None:
        self.capsys.readouterr()
        self.caplog.clear()

    def errors(self) -> list[logging.LogRecord]:
        """The ERROR records so far (Powertools passes ``extra`` keys as record attributes)."""
        return [r for r in self.caplog.records if r.levelno >= logging.ERROR]

    def metrics(self) -> dict[str, float]:
        """The metrics printed since the last look."""
        return metrics(self.capsys.readouterr().out)

    def assert_misconfigured(self, resource: str, deliveries: int) -> None:
        """One error line per delivery naming ``resource``, no traceback, and as many counted."""
        errors = self.errors()
        assert len(errors) == deliveries, [r.getMessage() for r in errors]
        for record in errors:
            assert getattr(record, "resource", None) == resource
            assert resource.split(" ", 1)[1] in str(getattr(record, "reason", ""))
            assert record.exc_info is None  # the reason says it all
        assert self.metrics()["Misconfigurations"] == deliveries


# About the step-message path (inline execution off).
pytestmark = pytest.mark.dispatched


@pytest.fixture
def operator(
    deploy: Deploy, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> Operator:
    return Operator(deploy, capsys, caplog)


def delivered(event: dict[str, Any], attempt: int) -> dict[str, Any]:
    """``event`` as SQS delivers it the ``attempt``-th time."""
    for record in event["Records"]:
        record["attributes"]["ApproximateReceiveCount"] = str(attempt)
    return event


def failed(event: dict[str, Any]) -> dict[str, Any]:
    """The partial batch response that reports every record of ``event`` for redelivery."""
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"]]}


def test_workflow_message_on_a_missing_table_is_redelivered_past_the_missing_run_limit_until_fixed(
    sample_event: SampleEvent,
    world: AwsWorld,
    operator: Operator,
) -> None:
    # GIVEN the workflow function deployed with a typo in its table name
    operator.deploy(WORKFLOW_TABLE_NAME=TYPO_TABLE)
    event = sample_event("sqs_workflow_event.json")
    # WHEN the first message of a new run is delivered more times than a missing run is waited for
    deliveries = MISSING_RUN_DELIVERIES + 2
    for attempt in range(1, deliveries + 1):
        # THEN every delivery is reported for redelivery: never acked as "no such run"
        assert workflow_handler.handler(delivered(event, attempt), CONTEXT) == failed(event)
    # AND each logged one error line naming the table, and counted one misconfiguration
    operator.assert_misconfigured(f"table {TYPO_TABLE}", deliveries)
    # AND the real table holds no trace of the run
    with pytest.raises(NotFound):
        world.runs.get(RUN_ID)
    # WHEN the configuration is fixed and the same message is delivered again
    operator.deploy()
    assert workflow_handler.handler(delivered(event, deliveries + 1), CONTEXT) == {"batchItemFailures": []}
    # THEN the run starts as on a first delivery
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
    assert [s.status for s in world.steps.list(RUN_ID)] == [StepStatus.PENDING]


def test_legacy_step_message_on_a_missing_table_is_redelivered_not_acked_as_gone(
    sample_event: SampleEvent,
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    operator: Operator,
) -> None:
    # GIVEN a running run and its first step message as an older producer sends it (no run_context,
    # so the consumer reads the run first)
    operator.deploy()
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }
    event = receive(embedded, resources, QueueName.STEP)
    payload = decode_body(event["Records"][0]["body"])
    assert isinstance(payload, InvokePayload)
    event["Records"][0]["body"] = encode_body(payload.model_copy(update={"run_context": None}))
    step_id = step_id_of(event)
    # WHEN the step function, deployed with a typo in its table name, handles it
    operator.deploy(WORKFLOW_TABLE_NAME=TYPO_TABLE)
    # THEN it is reported for redelivery, with one error naming the table
    assert step_handler.handler(delivered(event, 1), CONTEXT) == failed(event)
    operator.assert_misconfigured(f"table {TYPO_TABLE}", 1)
    # AND the step was not touched
    assert world.steps.get(RUN_ID, step_id).status is StepStatus.PENDING
    # WHEN the configuration is fixed and the message redelivered THEN the step runs and completes
    operator.deploy()
    assert step_handler.handler(delivered(event, 2), CONTEXT) == {"batchItemFailures": []}
    assert world.steps.get(RUN_ID, step_id).status is StepStatus.COMPLETED


def test_dispatch_to_a_missing_step_queue_fails_the_pass_and_the_redelivery_dispatches_once(
    sample_event: SampleEvent,
    world: AwsWorld,
    embedded: EmbeddedAws,
    resources: ProvisionedResources,
    operator: Operator,
) -> None:
    # GIVEN the workflow function deployed with a typo in its step queue URL
    event = sample_event("sqs_workflow_event.json")
    operator.deploy(STEP_QUEUE_URL=(wrong_url := resources.queues[QueueName.STEP].url + "-typo"))
    # WHEN it handles the first message of a run (which dispatches the first step)
    # THEN the message is reported for redelivery, with one error naming the queue URL
    assert workflow_handler.handler(delivered(event, 1), CONTEXT) == failed(event)
    operator.assert_misconfigured(f"queue {wrong_url}", 1)
    # AND the run still runs (nothing failed it), its step waits for its message
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
    # WHEN the configuration is fixed and the message redelivered
    operator.deploy()
    assert workflow_handler.handler(delivered(event, 2), CONTEXT) == {"batchItemFailures": []}
    # THEN the step is created once and its message is on the real step queue
    (step,) = world.steps.list(RUN_ID)
    (record,) = receive(embedded, resources, QueueName.STEP)["Records"]
    assert step_id_of({"Records": [record]}) == step.step_id


def test_record_from_a_queue_the_configuration_does_not_name_is_a_misconfiguration_not_malformed(
    sample_event: SampleEvent,
    resources: ProvisionedResources,
    operator: Operator,
) -> None:
    # GIVEN the workflow function deployed with a typo in its own queue's URL
    operator.deploy(WORKFLOW_QUEUE_URL=resources.queues[QueueName.WORKFLOW].url + "-typo")
    event = sample_event("sqs_workflow_event.json")
    # WHEN a record of the queue it is mapped to arrives
    assert workflow_handler.handler(event, CONTEXT) == failed(event)
    # THEN it is counted as a misconfiguration naming the queue, not rejected as malformed
    (error,) = operator.errors()
    assert getattr(error, "resource", None) == f"queue {resources.queues[QueueName.WORKFLOW].arn}"
    counted = operator.metrics()
    assert counted["Misconfigurations"] == 1 and "DeliveriesRejected" not in counted


@pytest.mark.usefixtures("deployed")
def test_step_message_refused_by_iam_is_redelivered_and_runs_once_access_is_granted(
    sample_event: SampleEvent,
    world: AwsWorld,
    resources: ProvisionedResources,
    operator: Operator,
) -> None:
    # GIVEN a running run and its sample step message, and a role DynamoDB refuses
    assert workflow_handler.handler(sample_event("sqs_workflow_event.json"), CONTEXT) == {
        "batchItemFailures": []
    }
    event = sample_event("sqs_step_event.json")
    step_id = step_id_of(event)
    container = PROCESS.container.get()
    operator.clear()
    # WHEN the step function handles it
    with access_denied(container.world.clients.dynamodb, "dynamodb"):
        response = step_handler.handler(delivered(event, 1), CONTEXT)
    # THEN it is reported for redelivery, with one error saying access to the table was denied
    assert response == failed(event)
    assert "access denied" in str(getattr(operator.errors()[0], "reason", ""))
    operator.assert_misconfigured(f"table {resources.table_name}", 1)
    # AND once access is granted the redelivery claims the step (it was never started)
    step_handler.handler(delivered(event, 2), CONTEXT)
    assert world.steps.get(RUN_ID, step_id).attempt == 1


def test_api_answers_503_naming_the_table_never_404(
    sample_event: SampleEvent,
    operator: Operator,
) -> None:
    # GIVEN the API function deployed with a typo in its table name
    operator.deploy(WORKFLOW_TABLE_NAME=TYPO_TABLE)
    read = sample_event("http_start_run_event.json")
    read.update(rawPath=f"/runs/{RUN_ID}", body=None)
    read["requestContext"]["http"].update(method="GET", path=f"/runs/{RUN_ID}")
    # WHEN a client reads a run and starts one
    answers = [
        api_handler.handler(read, CONTEXT),
        api_handler.handler(sample_event("http_start_run_event.json"), CONTEXT),
    ]
    # THEN both are 503 with the reason naming the table: never "run not found"
    for answer in answers:
        assert answer["statusCode"] == 503
        error = json.loads(answer["body"])["error"]
        assert error["kind"] == "Misconfigured" and TYPO_TABLE in error["message"]
    # AND they count as server errors and as misconfigurations
    counted = operator.metrics()
    assert counted["ApiServerErrors"] == 2 and counted["Misconfigurations"] == 2


# An EventBridge scheduled event, as the reconciler's and the scheduler's rules send it.
SCHEDULED = {"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}
INVOCATIONS: dict[str, tuple[Callable[..., Any], str | None]] = {
    "workflow": (workflow_handler.handler, "sqs_workflow_event.json"),
    "step": (step_handler.handler, "sqs_step_event.json"),
    "api": (api_handler.handler, "http_start_run_event.json"),
    "reconciler": (reconciler_handler.handler, None),
    "scheduler": (scheduler_handler.handler, None),
}


@pytest.mark.parametrize("function", sorted(INVOCATIONS))
def test_a_cold_start_that_cannot_load_the_app_fails_the_invocation_and_is_counted(
    function: str,
    sample_event: SampleEvent,
    operator: Operator,
) -> None:
    # GIVEN the functions deployed with WORKFLOW_APP naming a module the bundle lacks
    operator.deploy(WORKFLOW_APP="shop_typo:app")
    handler, event_file = INVOCATIONS[function]
    event = sample_event(event_file) if event_file else dict(SCHEDULED)
    # WHEN an invocation comes
    # THEN it fails (Lambda deletes none of an SQS batch: it comes back after the visibility timeout)
    with pytest.raises(BadInput, match="shop_typo"):
        handler(event, CONTEXT)
    # AND it logged one error and counted one misconfiguration, which MisconfigurationAlarm watches
    (error,) = operator.errors()
    assert "could not be built" in error.getMessage() and "shop_typo" in str(getattr(error, "reason", ""))
    assert operator.metrics()["Misconfigurations"] == 1


def test_a_workflow_message_a_bad_cold_start_left_queued_starts_its_run_once_fixed(
    sample_event: SampleEvent, world: AwsWorld, operator: Operator
) -> None:
    # GIVEN a first message that met a cold start with a wrong WORKFLOW_APP (not deleted)
    operator.deploy(WORKFLOW_APP="shop_typo:app")
    event = sample_event("sqs_workflow_event.json")
    with pytest.raises(BadInput):
        workflow_handler.handler(delivered(event, 1), CONTEXT)
    # WHEN the configuration is fixed and SQS delivers it again
    operator.deploy()
    assert workflow_handler.handler(delivered(event, 2), CONTEXT) == {"batchItemFailures": []}
    # THEN the run starts as on a first delivery
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
