"""Lambda entry point of the workflow queue: continuations of runs (replay, suspension passes).

``template.yaml``: ``Handler: functions.workflow_handler.handler``, an SQS event on
the workflow queue with ``FunctionResponseTypes: [ReportBatchItemFailures]``. Each
record goes to ``Runtime.handle`` (``world_aws.aws.queue.lambda_sqs``: one failing or
malformed record never fails its neighbours); metrics are flushed as EMF at the end.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._container import PROCESS


@PROCESS.metrics.log_metrics
@PROCESS.logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process one batch of workflow messages.

    Args:
        event: the Lambda SQS event.
        context: the Lambda context.

    Returns:
        The partial batch response ``{"batchItemFailures": [...]}``.
    """
    container = PROCESS.built()
    remaining = context.get_remaining_time_in_millis()
    answer = container.handed_over(event, remaining)  # a delivery a newer version handed to this one
    if answer is not None:
        return answer
    return dict(container.process_sqs(event, remaining))
