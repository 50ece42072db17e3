"""Lambda entry point of the scheduler: starts the due ticks of the app's scheduled workflows.

``template.yaml``: ``Handler: functions.scheduler_handler.handler``, a ``Schedule``
event every minute. One pass per invocation (``world_aws.worker.scheduler``);
the counts go out as EMF (``ScheduledRunsStarted``, ``ScheduledTicksSkipped``,
``ScheduledTicksMissed``, ``ScheduleFailures``).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._container import PROCESS
from world_aws.worker.scheduler import TickOutcome


@PROCESS.metrics.log_metrics
@PROCESS.logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    """Run one scheduler pass.

    Args:
        event: the EventBridge scheduled event (its content is not used: the pass reads the clock).
        context: the Lambda context.

    Returns:
        How many ticks the pass started, found started, skipped, missed and refused, and the
        schedules it failed.
    """
    report = PROCESS.built().schedule()
    counts = {outcome.value: report.count(outcome) for outcome in TickOutcome}
    return {**counts, "failed": len(report.failed)}
