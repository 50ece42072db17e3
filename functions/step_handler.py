"""Lambda entry point of the step queue: runs one step per record (claim, execute, record).

``template.yaml``: ``Handler: functions.step_handler.handler``, an SQS event on the
step queue with ``FunctionResponseTypes: [ReportBatchItemFailures]``. The step
consumer (contract §5.1) lives in the runtime; the last completer of a fan-out
continues its workflow inline, in this invocation.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._container import PROCESS


@PROCESS.metrics.log_metrics
@PROCESS.logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process one batch of step messages.

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
