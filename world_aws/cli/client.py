"""``ApiClient``: the operator CLI's HTTP client for the world-aws API (stdlib urllib).

It targets ``$WORLD_AWS_API`` (a ``world-aws dev`` stack, or a deployed
stack's API URL) or an explicit ``--api URL``. Requests to an API Gateway
default endpoint (``*.execute-api.<region>.amazonaws.com``) are signed with
SigV4 from the default AWS credential chain, for IAM-authorized APIs;
``sign=True``/``False`` forces either way (e.g. for a custom domain).

Failures are :class:`ApiError` (the API answered with an error status) or
:class:`Unreachable` (no answer), each with a one-line message for the user.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from world_aws.errors import BadInput

API_ENV = "WORLD_AWS_API"
DEFAULT_API = "http://127.0.0.1:8787"
TIMEOUT_SECONDS = 30.0


class ApiError(Exception):
    """The API answered with an error status; ``str()`` is its message."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


class Unreachable(Exception):
    """No answer from the API (refused, unknown host, timeout, TLS failure)."""


def api_url(explicit: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The API base URL: ``explicit`` (``--api``), else ``$WORLD_AWS_API``, else the dev default.

    Raises:
        BadInput: the URL is not http(s).
    """
    env = os.environ if environ is None else environ
    url = (explicit or env.get(API_ENV, "").strip() or DEFAULT_API).rstrip("/")
    shown = url if len(url) <= 80 else url[:80] + "..."
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port  # the port is parsed lazily: out of range raises here
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535"
        raise BadInput(f"the API URL {shown!r} cannot be read: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise BadInput(f"the API URL must be http:// or https://, got {shown!r}")
    if len(host) > 253 or any(not 0 < len(label) <= 63 for label in host.rstrip(".").split(".")):
        raise BadInput(f"the API URL's host is not a valid name (labels of 1-63 characters): {shown!r}")
    return url


def signs_by_default(url: str) -> bool:
    """True for an API Gateway default endpoint (``<id>.execute-api.<region>.amazonaws.com``)."""
    host = (urlsplit(url).hostname or "").lower()
    return ".execute-api." in host and host.endswith((".amazonaws.com", ".amazonaws.com.cn"))


class ApiClient:
    """Calls the world-aws HTTP API at ``base_url``.

    Args:
        base_url: e.g. ``http://127.0.0.1:8787`` or ``https://abc123.execute-api.eu-west-1.amazonaws.com``.
        sign: SigV4-sign requests; None signs only for ``execute-api`` hosts.
        timeout: seconds to wait for each answer.
    """

    def __init__(self, base_url: str, *, sign: bool | None = None, timeout: float = TIMEOUT_SECONDS) -> None:
        self.base_url = base_url.rstrip("/")
        self._sign = sign
        self._timeout = timeout
        # A proxy from the environment (HTTP_PROXY) must not swallow requests to a local dev stack.
        handlers = [urllib.request.ProxyHandler({})] if _is_loopback(self.base_url) else []
        self._opener = urllib.request.build_opener(*handlers)

    # --- the routes ----------------------------------------------------------------------

    def start(self, workflow: str, args: list[Any], kwargs: dict[str, Any], key: str | None) -> Any:
        body = {"workflow": workflow, "args": args, "kwargs": kwargs}
        if key is not None:
            body["idempotency_key"] = key
        return self.call("POST", "/runs", body=body)

    def list_runs(self, **query: Any) -> Any:
        return self.call("GET", "/runs", query=query)

    def get_run(self, run_id: str) -> Any:
        return self.call("GET", f"/runs/{_segment(run_id)}")

    def events(self, run_id: str) -> list[Any]:
        """Every event row of the run, following ``next_after`` across pages."""
        rows: list[Any] = []
        after = 0
        while True:
            page = self.call("GET", f"/runs/{_segment(run_id)}/events", query={"after": after})
            rows.extend(page["events"])
            if page.get("next_after") is None:
                return rows
            after = int(page["next_after"])

    def run_log(self, run_id: str) -> dict[str, Any]:
        """The run's whole log as exported (``GET /runs/{id}/log``, every page): ``{run, events}``."""
        events: list[Any] = []
        after = 0
        while True:
            page = self.call("GET", f"/runs/{_segment(run_id)}/log", query={"after": after})
            if not isinstance(page, dict) or not isinstance(page.get("events"), list):
                raise ApiError(200, "BadResponse", f"{self.base_url} answered a log page without events")
            events.extend(page["events"])
            if page.get("next_after") is None:
                return {"run": page.get("run"), "events": events}
            after = int(page["next_after"])

    def step_list(self, run_id: str) -> Any:
        """``{run_id, steps, summary}``: the run's step rows with their attempts, and its stats.

        A step without outcome of an ended run reads ``abandoned``.
        """
        return self.call("GET", f"/runs/{_segment(run_id)}/steps")

    def cancel(self, run_id: str, reason: str | None) -> Any:
        return self.call("POST", f"/runs/{_segment(run_id)}/cancel", body={"reason": reason})

    def fork(self, run_id: str, from_step: str | None, key: str | None = None) -> Any:
        body = {"from_step": from_step, "idempotency_key": key}
        return self.call("POST", f"/runs/{_segment(run_id)}/fork", body=body)

    def resume(self, token: str, payload: Any, resume_id: str | None = None) -> Any:
        body: dict[str, Any] = {"payload": payload}
        if resume_id is not None:
            body["resume_id"] = resume_id
        return self.call("POST", f"/hooks/{_segment(token)}/resume", body=body)

    def stream(self, run_id: str, name: str, start_index: int, wait: float) -> list[Any]:
        """One NDJSON page of a stream: value lines, then ``{"next_index", "done"}``."""
        path = f"/runs/{_segment(run_id)}/streams/{_segment(name)}"
        lines: list[Any] = self.call(
            "GET", path, query={"start_index": start_index, "wait": wait}, ndjson=True
        )
        return lines

    # --- HTTP ----------------------------------------------------------------------------

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        ndjson: bool = False,
    ) -> Any:
        """One request; returns the decoded JSON answer (a list of its lines if ``ndjson``).

        Raises:
            ApiError: an error status (the API's own message when it sent one).
            Unreachable: no answer.
        """
        params = {k: v for k, v in (query or {}).items() if v is not None}
        target = path + (f"?{urlencode(params)}" if params else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        try:
            with self._open(method, target, data, "application/json") as answer:
                raw = answer.read()
                if ndjson:
                    return [self._decode(answer.status, line) for line in raw.splitlines() if line.strip()]
                return self._decode(answer.status, raw)
        except urllib.error.HTTPError as exc:
            raise self._error(exc.code, exc.read(), exc.reason) from None
        except (urllib.error.URLError, OSError) as exc:
            raise Unreachable(self._unreachable(exc)) from None

    def forward(
        self, method: str, target: str, body: bytes, content_type: str | None
    ) -> tuple[int, dict[str, str], bytes]:
        """One request passed through as it is (signed when this client signs): status, headers, body.

        An error status is an answer like any other here, not an exception.

        Raises:
            Unreachable: no answer.
        """
        data = body if body or method in ("POST", "PUT", "PATCH") else None
        try:
            with self._open(method, target, data, content_type) as answer:
                return answer.status, dict(answer.headers.items()), answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            raise Unreachable(self._unreachable(exc)) from None

    def _open(self, method: str, target: str, data: bytes | None, content_type: str | None) -> Any:
        url = self.base_url + target
        headers = {"accept": "application/json"}
        if data is not None and content_type:
            headers["content-type"] = content_type
        if self._should_sign():
            from world_aws.aws.sigv4 import sigv4_headers  # botocore only when signing

            headers = sigv4_headers(method, url, body=data or b"", headers=headers)
        request = urllib.request.Request(url, data=data, method=method)
        for name, value in headers.items():
            request.add_header(name, value)
        return self._opener.open(request, timeout=self._timeout)

    def _should_sign(self) -> bool:
        return self._sign if self._sign is not None else signs_by_default(self.base_url)

    def _decode(self, status: int, raw: bytes) -> Any:
        try:
            return json.loads(raw or b"null")
        except ValueError:
            raise ApiError(
                status, "BadResponse", f"{self.base_url} answered {status} with a body that is not JSON"
            ) from None

    def _error(self, status: int, raw: bytes, reason: str) -> ApiError:
        try:
            document = json.loads(raw)
        except ValueError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("error"), dict):
            error = document["error"]
            return ApiError(status, str(error.get("kind", "")), str(error.get("message", reason)))
        # API Gateway's own answers (e.g. 403 {"message": "Forbidden"} without a valid signature)
        message = document.get("message") if isinstance(document, dict) else None
        text = f"{self.base_url} answered {status} {reason}" + (f": {message}" if message else "")
        if status == 403 and not self._should_sign():
            text += " (an IAM-authorized API needs signed requests: pass --sign)"
        return ApiError(status, "Http", text)

    def _unreachable(self, exc: Exception) -> str:
        reason: object = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, ConnectionRefusedError):
            why = "connection refused"
        elif isinstance(reason, socket.gaierror):
            why = "unknown host"
        elif isinstance(reason, TimeoutError | socket.timeout):
            why = f"no answer within {self._timeout:g}s"
        else:
            why = str(getattr(reason, "strerror", None) or reason)
        text = f"cannot reach {self.base_url}: {why}"
        if _is_loopback(self.base_url):
            text += " — is `world-aws dev` running?"
        return text


def _is_loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")


def _segment(value: str) -> str:
    """A path parameter, percent-encoded (tokens may hold ``/``, ``?``, ``#``...)."""
    return quote(value, safe="")
