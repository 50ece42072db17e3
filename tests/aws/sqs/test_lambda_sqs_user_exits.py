"""A Lambda SQS batch whose user code calls ``sys.exit``: that record's step fails like any
exception (contract §8.2), and its neighbours in the batch are untouched (contract §4.2: never
poison a batch).

Powertools' ``BatchProcessor`` turns an ``Exception`` of one record into that record's
failure, but a ``BaseException`` such as ``SystemExit`` goes through it: out of
``process_sqs_event``, the invocation fails and Lambda retries every record of the
batch. User code in a step or a workflow must not be able to do that.
"""

from __future__ import annotations

import sys
from typing import Any

from world_aws import StepFailedError, Workflows
from world_aws.aws.queue.lambda_sqs import process_sqs_event
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import EventType, RunStatus, StepFailedData
from world_aws.contract.transport import encode_body_bytes
from world_aws.contract.world import QueueName
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.serde.errors import decode_error
from world_aws.worker.config import RuntimeConfig

ARNS = {
    QueueName.WORKFLOW: "arn:aws:sqs:us-east-1:123456789012:wf-workflows",
    QueueName.STEP: "arn:aws:sqs:us-east-1:123456789012:wf-steps",
}
URLS = {
    QueueName.WORKFLOW: "https://sqs.us-east-1.amazonaws.com/123456789012/wf-workflows",
    QueueName.STEP: "https://sqs.us-east-1.amazonaws.com/123456789012/wf-steps",
}


def exiting_app() -> Workflows:
    app = Workflows()

    @app.step(max_retries=0)
    def legacy_cli(code: int) -> str:
        sys.exit(code)  # a reused command-line helper that exits on error

    @app.step
    def fine(order_id: str) -> str:
        return f"ok:{order_id}"

    @app.workflow
    async def calls_cli(code: int) -> str:
        try:
            return await legacy_cli(code)
        except StepFailedError as failure:
            return f"caught {failure.error_type}"

    @app.workflow
    async def quits(order_id: str) -> str:
        await fine(order_id)
        sys.exit(5)

    @app.workflow
    async def healthy(order_id: str) -> str:
        return await fine(order_id)

    return app


def _batch(world: Any, queue: QueueName) -> dict[str, Any]:
    """Every queued message of ``queue`` as one Lambda SQS event (first delivery each)."""
    records = [
        {
            "messageId": message.message_id,
            "receiptHandle": f"rh-{message.message_id}",
            "body": encode_body_bytes(message.body),
            "attributes": {"ApproximateReceiveCount": str(message.attempt)},
            "messageAttributes": {},
            "eventSourceARN": ARNS[queue],
        }
        for message in world.memory_queue.pending(queue)
    ]
    return {"Records": records}


def test_user_code_calling_sys_exit_neither_escapes_the_batch_nor_skips_the_retry_policy() -> None:
    # GIVEN one batch of three first workflow messages: a run whose step calls sys.exit(3), a run
    # whose workflow calls sys.exit(5) after a step, and a healthy run; inline steps on (the default)
    clock = ManualClock()
    world = create_memory_world(clock=clock)
    runtime = Runtime(world, exiting_app(), RuntimeConfig())
    try:
        cli = runtime.start("calls_cli", 3)
        quitter = runtime.start("quits", "o-2")
        healthy = runtime.start("healthy", "o-1")
        event = _batch(world, QueueName.WORKFLOW)
        assert len(event["Records"]) == 3
        # WHEN the workflow function processes the batch
        response = process_sqs_event(event, runtime.handle, sqs=None, queue_urls=URLS, clock=clock)  # type: ignore[arg-type]
        # THEN nothing escaped it, and no record is left to redeliver
        assert response == {"batchItemFailures": []}
        # AND the step that exited failed like any exception (max_retries=0), which its workflow caught,
        # its recorded error naming the exit
        assert world.runs.get(cli.run_id).status is RunStatus.COMPLETED
        assert cli.result(timeout=0) == "caught RuntimeError"
        # AND the workflow that exited failed as user code that raised
        quit_run = world.runs.get(quitter.run_id)
        assert quit_run.status is RunStatus.FAILED and quit_run.error_code == "USER_ERROR"
        # AND its neighbour in the batch completed in the same invocation
        assert healthy.result(timeout=0) == "ok:o-1"
        (failed,) = [e for e in world.events.list(cli.run_id) if e.type is EventType.STEP_FAILED]
        assert "SystemExit(3)" in decode_error(failed.data_as(StepFailedData).error or b"").message
    finally:
        runtime.close()
        world.close()
