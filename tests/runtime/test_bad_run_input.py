"""Issue 14: a run whose input can never be decoded fails at once; no message is due beyond a year.

A workflow message can carry creation data (``run_input``) that passes the
transport's checks but is not a value the workflow can start from: bytes that
are not the serializer's format, a value of the wrong shape, arguments that do
not fit. The first delivery fails the run with ``BAD_INPUT`` and is acked,
instead of failing on every delivery up to the delivery cap.
"""

from __future__ import annotations

from datetime import timedelta

import cbor2
import pytest

from world_aws import WorkflowFailedError, Workflows, sleep
from world_aws.contract.limits import MAX_DELAY_SECONDS
from world_aws.contract.payload import InvokePayload, RunInput
from world_aws.contract.records import RunStatus
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import SPEC_VERSION_CURRENT, Ack, QueueName
from world_aws.errors import BadInput

from .failures import failure_of
from .harness import Harness


def greeting_app() -> Workflows:
    app = Workflows()

    @app.workflow(name="greet")
    async def greet(name: str) -> str:
        return f"hello {name}"

    @app.workflow(name="nap")
    async def nap(days: float) -> str:
        await sleep(timedelta(days=days))
        return "rested"

    return app


def publish_raw_start(h: Harness, run_id: str, data: bytes) -> None:
    run_input = RunInput(
        workflow_name="greet",
        deployment_id=h.world.deployment_id(),
        spec_version=SPEC_VERSION_CURRENT,
        input=data,
    )
    message = InvokePayload(run_id=run_id, run_input=run_input)
    h.world.queue.publish(QueueName.WORKFLOW, encode_payload(message))


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\xff\x00", "malformed CBOR"),
        (cbor2.dumps(cbor2.CBORTag(28, [1])), "CBOR tag 28"),
        (cbor2.dumps([1, 2]), "must be {'args'"),
        (cbor2.dumps({"args": "x"}), "must be {'args'"),
        (cbor2.dumps({"args": [], "kwargs": {}}), "arguments do not fit workflow 'greet'"),
    ],
    ids=["not cbor", "shared ref", "a list", "args not a list", "args do not bind"],
)
def test_a_run_input_that_cannot_be_decoded_fails_the_run_on_its_first_delivery(
    harness: Harness, data: bytes, problem: str
) -> None:
    # GIVEN a workflow message whose run_input passes the transport but cannot start the workflow
    runtime = harness.runtime_for(greeting_app())
    publish_raw_start(harness, "wrun_badinput", data)
    # WHEN it is delivered
    assert harness.settle("wrun_badinput") is RunStatus.FAILED
    # THEN one delivery failed the run with BAD_INPUT and was acked
    [delivery] = harness.deliveries
    assert delivery.attempt == 1 and isinstance(delivery.result, Ack)
    with pytest.raises(WorkflowFailedError) as failed:
        runtime.get_run("wrun_badinput").result(timeout=0)
    assert failed.value.error_code == "BAD_INPUT"
    assert problem in failed.value.error_message


def test_a_sleep_beyond_the_one_year_horizon_fails_inside_the_workflow(harness: Harness) -> None:
    runtime = harness.runtime_for(greeting_app())
    failure = failure_of(harness, runtime.start("nap", 400.0))
    assert "beyond the 31622400 s (366-day) horizon" in failure.error_message


@pytest.mark.parametrize("delay", [MAX_DELAY_SECONDS + 1, 2.0**100])
def test_both_queues_refuse_a_delay_beyond_the_horizon(harness: Harness, delay: float) -> None:
    with pytest.raises(BadInput, match="horizon"):
        harness.world.queue.publish(
            QueueName.WORKFLOW, encode_payload(InvokePayload(run_id="r")), delay_seconds=delay
        )
