"""``handle_http``: one API Gateway HTTP API event in, one response out; errors mapped to statuses.

The mapping from world-aws errors to HTTP (:func:`status_of`) is the only
place that decides status codes for failures. A misconfigured deployment (a
missing table, queue or bucket, refused access) is a 503 whose body names the
resource, never a 404: the run may well exist. Unexpected exceptions are logged
with their traceback and answered with a 500 naming the request id: no stack
trace, exception text or internal detail ever goes into a response.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from world_aws.api.http import Request, Response, error_response, parse_event
from world_aws.api.routes import ROUTES
from world_aws.errors import (
    BadInput,
    Conflict,
    ErrorKind,
    Misconfigured,
    NotFound,
    RetryLater,
    RunExpired,
    Throttled,
    WorldAwsError,
)
from world_aws.runtime.runtime import Runtime

LOG = logging.getLogger("world_aws.api")


# Lambda returns at most 6 MB from a synchronous invocation (body, headers and JSON framing
# included): https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
MAX_RESPONSE_BYTES = 5 * 1024 * 1024


def handle_http(
    event: dict[str, Any], runtime: Runtime, *, max_response_bytes: int = MAX_RESPONSE_BYTES
) -> dict[str, Any]:
    """Answer one API Gateway HTTP API (payload format 2.0) event.

    Routes: ``POST /runs``, ``GET /runs``, ``GET /runs/{run_id}``,
    ``GET /runs/{run_id}/events``, ``GET /runs/{run_id}/events/{position}``,
    ``GET /runs/{run_id}/steps``, ``GET /runs/{run_id}/timeline``, ``GET /workflows``,
    ``GET /runs/{run_id}/streams/{name}`` (NDJSON),
    ``POST /runs/{run_id}/cancel``, ``POST /runs/{run_id}/fork``, ``POST /hooks/{token}/resume``.

    Args:
        event: the event API Gateway passes to the Lambda function.
        runtime: the app bound to its World.
        max_response_bytes: an answer whose body is larger (in UTF-8) is replaced by a 413
            ``ResponseTooLarge`` naming both sizes (Lambda could not return it).

    Returns:
        ``{"statusCode", "headers", "body", "isBase64Encoded"}``, the body a JSON document.
        Never raises: whatever goes wrong is a JSON 500 (counted in ``ApiServerErrors``
        by the function, which reads the status).
    """
    response = respond(event, runtime)
    try:
        answer = response.to_event_response()
    except Exception:
        LOG.exception("the answer to request %s is not JSON-safe", _request_id(event))
        return _internal_error(_request_id(event)).to_event_response()
    size = len(answer["body"].encode("utf-8"))
    if size > max_response_bytes:
        LOG.warning("request %s: answer of %d bytes is over the response cap", _request_id(event), size)
        message = (
            f"the answer is {size} bytes, over the API's {max_response_bytes}-byte response limit; "
            "read a large run result through the runtime (RunHandle.result) instead"
        )
        return error_response(413, "ResponseTooLarge", message).to_event_response()
    return answer


def respond(event: Any, runtime: Runtime) -> Response:
    """:func:`handle_http` before the response is put in Lambda's shape."""
    request_id = "-"
    try:
        request = parse_event(event)
        request_id = request.request_id
        return _dispatch(request, runtime)
    except Misconfigured as exc:
        LOG.error("request %s: %s", request_id, exc)
        return error_response(status_of(exc), exc.kind.value, str(exc))
    except RetryLater as exc:
        LOG.warning("request %s: %s: %s", request_id, type(exc).__name__, exc)
        status = 429 if isinstance(exc, Throttled) else 503
        retry_after = str(max(1, math.ceil(exc.retry_after)))
        return error_response(
            status, exc.kind.value, "the backend is busy; try again", headers={"retry-after": retry_after}
        )
    except WorldAwsError as exc:
        status = status_of(exc)
        if status < 500:
            return error_response(status, exc.kind.value, str(exc))
        LOG.exception("request %s failed", request_id)
        return _internal_error(request_id)
    except Exception:
        LOG.exception("request %s failed", request_id)
        return _internal_error(request_id)


def _internal_error(request_id: str) -> Response:
    return error_response(500, "Internal", f"internal error (request id {request_id})")


def _request_id(event: Any) -> str:
    context = event.get("requestContext") if isinstance(event, dict) else None
    request_id = context.get("requestId") if isinstance(context, dict) else None
    return request_id if isinstance(request_id, str) and request_id.isprintable() else "-"


def _dispatch(request: Request, runtime: Runtime) -> Response:
    allowed = []
    for route in ROUTES:
        params = route.match(request.segments)
        if params is None:
            continue
        if route.method == request.method:
            try:
                return route.fn(request, params, runtime)
            except NotFound as exc:
                raise NotFound(_not_found_message(params, exc)) from exc
        allowed.append(route.method)
    if allowed:
        return error_response(
            405,
            "MethodNotAllowed",
            f"{request.method} is not allowed on {request.path} (allowed: {', '.join(allowed)})",
            headers={"allow": ", ".join(allowed)},
        )
    return error_response(404, ErrorKind.NOT_FOUND.value, f"no such route: {request.method} {request.path}")


def _not_found_message(params: dict[str, str], exc: NotFound) -> str:
    """A stable message for a 404, whichever World produced it."""
    if "position" in params and "no event" in str(exc):
        return str(exc)
    if " has no step " in str(exc):  # a fork's from_step (client/fork_plan.py), not the run
        return str(exc)
    if "run_id" in params:
        return f"run {params['run_id']!r} not found"
    if "token" in params:
        return f"no live hook holds token {params['token']!r}"
    return str(exc)


def status_of(exc: WorldAwsError) -> int:
    """The HTTP status for a world-aws error."""
    if isinstance(exc, Misconfigured):
        return 503
    if isinstance(exc, BadInput):
        return 400
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, RunExpired):
        return 410
    if isinstance(exc, Throttled):
        return 429
    if isinstance(exc, RetryLater):
        return 503
    return 500
