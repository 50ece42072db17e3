"""The HTTP edge of the API: API Gateway HTTP API (payload format 2.0) events in, responses out.

``parse_event`` turns a v2.0 event into a :class:`Request` (method, path
segments, query, body bytes); ``json_response`` and ``error_response`` build
the ``{statusCode, headers, body}`` dict Lambda returns to API Gateway. The
dev server (:mod:`world_aws.api.server`) builds the same events from real HTTP
requests, so one code path serves both.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote

from pydantic import BaseModel, ValidationError

from world_aws.client.audit import LOCAL_ACTOR
from world_aws.errors import BadInput

JSON_HEADERS = {"content-type": "application/json"}
NDJSON_HEADERS = {"content-type": "application/x-ndjson"}

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request, as the routes see it.

    Attributes:
        method: upper-case HTTP method.
        segments: the path split on ``/`` and percent-decoded, empty segments dropped,
            stage prefix removed (``/prod/runs/x`` on stage ``prod`` → ``("runs", "x")``).
        query: query string parameters (API Gateway joins repeated ones with commas).
        body: the raw body bytes (base64-decoded when the event says so).
        request_id: API Gateway's request id, for logs and 500 responses.
        headers: the request headers, names lower-cased.
        caller: the IAM ARN API Gateway's SigV4 authorizer verified
            (``requestContext.authorizer.iam.userArn``); None without one (a local server,
            whose events never carry an authorizer).
    """

    method: str
    segments: tuple[str, ...]
    query: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    request_id: str = "-"
    headers: dict[str, str] = field(default_factory=dict)
    caller: str | None = None

    @property
    def actor(self) -> str:
        """Who makes this request, for the audit (``runtime/audit.py``): the caller, or ``local``."""
        return self.caller or LOCAL_ACTOR

    def require_json(self) -> None:
        """Refuse a body that is not declared JSON (a route that changes state and takes JSON only).

        A cross-site page can POST a form or ``text/plain`` without the browser asking the
        server first; ``application/json`` makes the browser ask (a CORS preflight), which
        this API never grants.

        Raises:
            BadInput: the request's content-type is not ``application/json``.
        """
        declared = self.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if declared != "application/json":
            raise BadInput(f"content-type: {self.path} takes application/json, got {declared or 'none'!r}")

    @property
    def path(self) -> str:
        return "/" + "/".join(self.segments)


@dataclass(frozen=True, slots=True)
class Response:
    """An HTTP response with a JSON body."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    def to_event_response(self) -> dict[str, Any]:
        """The Lambda proxy response API Gateway expects (``statusCode``, ``headers``, ``body``).

        Raises:
            ValueError, TypeError: the body is not JSON-safe (see ``jsonable.to_jsonable``).
        """
        if isinstance(self.body, NdjsonBody):
            text = "".join(_json_text(line) + "\n" for line in self.body.lines)
            headers = {**NDJSON_HEADERS, **self.headers}
        else:
            text, headers = _json_text(self.body), {**JSON_HEADERS, **self.headers}
        return {"statusCode": self.status, "headers": headers, "body": text, "isBase64Encoded": False}


@dataclass(frozen=True, slots=True)
class NdjsonBody:
    """A body of newline-delimited JSON documents (``application/x-ndjson``), one per line."""

    lines: list[Any]


def _json_text(body: Any) -> str:
    text = json.dumps(body, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (e.g. in an error message): \u-escape everything
        text = json.dumps(body, ensure_ascii=True, allow_nan=False)
    return text


def parse_event(event: Any) -> Request:
    """The :class:`Request` an API Gateway HTTP API v2.0 event describes.

    Raises:
        BadInput: the event is not a v2.0 HTTP event, or its body is not valid base64.
    """
    if not isinstance(event, Mapping):
        raise BadInput("event: expected an API Gateway HTTP API event object (payload format 2.0)")
    context = event.get("requestContext")
    context = context if isinstance(context, Mapping) else {}
    http = context.get("http")
    method = http.get("method") if isinstance(http, Mapping) else None
    raw_path = event.get("rawPath")
    if not isinstance(method, str) or not isinstance(raw_path, str):
        raise BadInput("event: requestContext.http.method and rawPath are required (payload format 2.0)")
    segments = [unquote(part) for part in raw_path.split("/") if part]
    stage = context.get("stage")
    # On a named stage (not $default) API Gateway keeps the stage in rawPath.
    if isinstance(stage, str) and stage != "$default" and segments[:1] == [stage]:
        segments = segments[1:]
    query = event.get("queryStringParameters") or {}
    if not isinstance(query, Mapping):
        raise BadInput("event: queryStringParameters must be an object")
    return Request(
        method=method.upper(),
        segments=tuple(_valid_text(s, "path") for s in segments),
        query={_valid_text(str(k), "query"): _valid_text(str(v), "query") for k, v in query.items()},
        body=_body(event),
        request_id=str(context.get("requestId") or "-"),
        headers=_headers(event.get("headers")),
        caller=_caller(context),
    )


def _caller(context: Mapping[str, Any]) -> str | None:
    """The IAM ARN of a SigV4-signed request (HTTP API with the IAM authorizer), else None."""
    authorizer = context.get("authorizer")
    iam = authorizer.get("iam") if isinstance(authorizer, Mapping) else None
    arn = iam.get("userArn") if isinstance(iam, Mapping) else None
    return arn if isinstance(arn, str) and arn else None


def _headers(raw: Any) -> dict[str, str]:
    """An event's headers, names lower-cased (API Gateway v2.0 sends them so already)."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(name).lower(): str(value) for name, value in raw.items()}


def _valid_text(text: str, where: str) -> str:
    """``text`` if it is valid Unicode. Raises BadInput naming ``where`` (e.g. a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"{where}: not valid Unicode ({exc.reason} at index {exc.start})") from None
    return text


def _body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise BadInput("event: body must be a string")
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):  # ValueError: non-ASCII characters in the text
            raise BadInput("body: isBase64Encoded is set but the body is not valid base64") from None
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadInput(f"body: not valid Unicode ({exc.reason} at index {exc.start})") from None


def parse_body(model: type[M], body: bytes, *, required: bool = True) -> M:
    """The request body validated as ``model``.

    An empty body is ``{}`` when ``required`` is false (all of ``model``'s fields
    have defaults), else a 400.

    Raises:
        BadInput: naming the field(s) at fault, e.g. ``args: Input should be a valid list``.
    """
    if not body.strip():
        if required:
            raise BadInput("body: a JSON object is required")
        body = b"{}"
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise BadInput(describe_validation_error(exc, where="body")) from None


def parse_query(model: type[M], query: Mapping[str, str]) -> M:
    """The query string validated as ``model``. Raises BadInput naming the parameter."""
    try:
        return model.model_validate(dict(query))
    except ValidationError as exc:
        raise BadInput(describe_validation_error(exc, where="query")) from None


def describe_validation_error(exc: ValidationError, *, where: str) -> str:
    """pydantic's errors, compactly: ``"args: Input should be a valid list; workflow: Field required"``.

    ``where`` names the whole input when an error has no field (e.g. the body is
    not an object, or not JSON).
    """
    parts = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or where
        message = error["msg"]
        if error["type"] == "json_invalid":
            message = f"not valid JSON ({error.get('ctx', {}).get('error', 'invalid')})"
        elif error["type"] == "list_type":
            message = "Input should be a valid list"
        elif error["type"] in ("model_type", "model_attributes_type", "dict_type") and location == where:
            message = "expected a JSON object"
        parts.append(f"{location}: {message}")
    return "; ".join(dict.fromkeys(parts))


def json_response(status: int, body: Any, *, headers: Mapping[str, str] | None = None) -> Response:
    return Response(status, body, dict(headers or {}))


def error_response(
    status: int, kind: str, message: str, *, headers: Mapping[str, str] | None = None
) -> Response:
    """``{"error": {"kind": ..., "message": ...}}``: the shape of every non-2xx answer."""
    return Response(status, {"error": {"kind": kind, "message": message}}, dict(headers or {}))
