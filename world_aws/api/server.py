"""A local HTTP server for the API and the web UI: real HTTP on 127.0.0.1.

``serve_api(runtime, port=...)`` starts a stdlib ``ThreadingHTTPServer`` on the
loopback interface only (nothing outside this machine may reach a dev stack)
in a background thread. Each request becomes the event API Gateway would send
(payload format 2.0) and goes through :func:`world_aws.api.app.handle_http`, so the
local API and the deployed one run the same code.

Every request first passes :mod:`world_aws.api.web_guard` (loopback Host, same
origin, JSON bodies), and every answer carries its security headers.

``GET /`` and ``GET /ui/...`` are the web UI's static files
(:mod:`world_aws.api.assets`), answered by this server itself: the deployed API
serves no UI. ``serve_backend(backend, port=...)`` serves the UI in front of any
other backend, e.g. ``world-aws ui``'s signing proxy to a deployed API.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from world_aws.api import assets
from world_aws.api.app import handle_http
from world_aws.api.http import error_response
from world_aws.api.web_guard import SECURITY_HEADERS, check_request
from world_aws.runtime.runtime import Runtime

LOOPBACK = "127.0.0.1"
# API Gateway refuses request bodies over 10 MB; Lambda's request payload limit is 6 MB.
MAX_BODY_BYTES = 6 * 1024 * 1024
# A larger body is read and dropped up to this size before the 413; beyond it the connection is closed.
DISCARD_LIMIT_BYTES = 64 * 1024 * 1024

ACCESS_LOG = logging.getLogger("world_aws.api.access")

# method, request target (path and query), headers, body → a Lambda proxy response
# ({"statusCode", "headers", "body", "isBase64Encoded"}).
Backend = Callable[[str, str, dict[str, str], bytes], dict[str, Any]]


def runtime_backend(runtime: Runtime | Callable[[], Runtime]) -> Backend:
    """The API of ``runtime``: each request as a v2.0 event through :func:`handle_http`.

    ``runtime`` may be a callable giving the runtime for each request: a local stack's
    newest deployment (``LocalStack.deploy``), which starts new runs.
    """
    current = runtime if callable(runtime) else (lambda: runtime)

    def answer(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        return handle_http(to_event(method, target, headers, body), current())

    return answer


class ApiServer:
    """The API (and the UI) served on ``127.0.0.1:<port>`` in a background thread; :meth:`stop` stops it.

    Args:
        backend: what answers the API's requests (:func:`runtime_backend` for a local runtime).
        port: 0 picks a free one (read it from ``.port`` or ``.url``).
    """

    def __init__(self, backend: Backend, *, port: int = 0) -> None:
        self._httpd = _Server((LOOPBACK, port), _Handler)
        self._httpd.backend = backend
        host, bound = self._httpd.server_address[:2]
        self.port = self._httpd.port = int(bound)
        self.url = f"http://{host!s}:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="world-aws-api", daemon=True
        )
        self._thread.start()
        self._stopped = False

    def stop(self) -> None:
        """Stop accepting requests, wait for the serving thread, close the socket. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> ApiServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_api(runtime: Runtime | Callable[[], Runtime], *, port: int = 0) -> ApiServer:
    """Serve ``runtime``'s HTTP API and the UI on ``127.0.0.1:port`` (0: a free port); see :class:`ApiServer`.

    Raises:
        OSError: the port cannot be bound (e.g. already in use).
    """
    return ApiServer(runtime_backend(runtime), port=port)


def serve_backend(backend: Backend, *, port: int = 0) -> ApiServer:
    """Serve the UI, and ``backend`` for every other request, on ``127.0.0.1:port``.

    Raises:
        OSError: the port cannot be bound.
    """
    return ApiServer(backend, port=port)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    backend: Backend
    port: int


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "world-aws-dev"

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    def _handle(self) -> None:
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self._send(error_response(400, "BadInput", "content-length: not a length").to_event_response())
            self.close_connection = True
            return
        refusal = check_request(self.command, dict(self.headers.items()), self.server.port)
        if refusal is not None:
            _discard(self.rfile, length)
            self._send(error_response(refusal.status, refusal.kind, refusal.message).to_event_response())
            self.close_connection = True
            return
        if length > MAX_BODY_BYTES:
            _discard(self.rfile, length)  # read it, so the client sees the answer, not a reset
            too_large = error_response(413, "BadInput", "body: the request body is too large")
            self._send(too_large.to_event_response())
            self.close_connection = True
            return
        body = self.rfile.read(length) if length > 0 else b""
        if self.command in ("GET", "HEAD") and self._send_asset():
            return
        self._send(self.server.backend(self.command, self.path, dict(self.headers.items()), body))

    def _send_asset(self) -> bool:
        """Answer ``/`` (a redirect) and ``/ui/<file>`` from the UI's files; False for any other path."""
        path = urlsplit(self.path).path
        if path == "/":
            self._send_raw(302, {"location": "/ui/"}, b"")
            return True
        if path != "/ui" and not path.startswith("/ui/"):
            return False
        found = assets.read(path.removeprefix("/ui").lstrip("/") or "index.html")
        if found is None:
            missing = error_response(404, "NotFound", f"no such file of the UI: {path}")
            self._send(missing.to_event_response())
        else:
            content, content_type = found
            self._send_raw(200, {"content-type": content_type, "cache-control": "no-cache"}, content)
        return True

    def _send_raw(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in {**headers, **SECURITY_HEADERS}.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send(self, response: dict[str, Any]) -> None:
        """Write a Lambda proxy response as API Gateway would."""
        body = response.get("body") or ""
        data = base64.b64decode(body) if response.get("isBase64Encoded") else body.encode("utf-8")
        self._send_raw(int(response["statusCode"]), dict(response.get("headers") or {}), data)

    def log_message(self, format: str, *args: Any) -> None:
        ACCESS_LOG.info("%s %s", self.address_string(), format % args)


def _discard(stream: BufferedIOBase, length: int) -> None:
    left = min(length, DISCARD_LIMIT_BYTES)
    while left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            return
        left -= len(chunk)


def to_event(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The API Gateway HTTP API (payload format 2.0) event for one HTTP request.

    Args:
        method: the request method.
        target: the request target (path and query string, still percent-encoded).
        headers: the request headers.
        body: the request body.
    """
    parts = urlsplit(target)
    query: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        # API Gateway joins repeated parameters with commas
        query[name] = f"{query[name]},{value}" if name in query else value
    try:
        text, encoded = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(body).decode("ascii"), True
    lowered = {name.lower(): value for name, value in headers.items()}
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path or "/",
        "rawQueryString": parts.query,
        "headers": lowered,
        "queryStringParameters": query or None,
        "requestContext": {
            "http": {
                "method": method,
                "path": parts.path or "/",
                "protocol": "HTTP/1.1",
                "sourceIp": LOOPBACK,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": text or None,
        "isBase64Encoded": encoded,
    }
