"""Lambda entry point of the HTTP API (API Gateway HTTP API, payload format 2.0).

``template.yaml``: ``Handler: functions.api_handler.handler`` behind an
``AWS::Serverless::HttpApi`` with IAM authorization. Routing, validation and
the mapping of errors to statuses are ``world_aws.api.app.handle_http``'s.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._container import PROCESS
from world_aws.api.app import handle_http


@PROCESS.metrics.log_metrics
@PROCESS.logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True
)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Answer one HTTP request.

    Args:
        event: the API Gateway HTTP API event (payload format 2.0).
        context: the Lambda context.

    Returns:
        ``{"statusCode", "headers", "body", "isBase64Encoded"}``.
    """
    container = PROCESS.built()
    response = handle_http(event, container.runtime)
    container.record_http(response)
    return response
