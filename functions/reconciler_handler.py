"""Lambda entry point of the reconciler: wakes non-terminal runs that made no progress.

``template.yaml``: ``Handler: functions.reconciler_handler.handler``, a ``Schedule``
event every ``ReconcilePeriodMinutes``. One tick per invocation
(``world_aws.worker.reconciler``); the counts go out as EMF (``RunsReconciled``,
``ReconcileFailures``), each repair is also a log line.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._container import PROCESS


@PROCESS.metrics.log_metrics
@PROCESS.logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    """Run one reconciler tick.

    Args:
        event: the EventBridge scheduled event (its content is not used).
        context: the Lambda context.

    Returns:
        ``{"looked_at", "woken", "remarked", "failed"}``: what the tick did.
    """
    report = PROCESS.built().reconcile()
    return {
        "looked_at": report.looked_at,
        "woken": len(report.woken),
        "remarked": report.remarked,
        "failed": report.failed,
    }
