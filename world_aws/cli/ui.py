"""``world-aws ui --api URL``: the web UI on 127.0.0.1 for a deployed stack, its API requests signed.

The browser talks only to this loopback server: it serves the UI's files and
passes every other request through to the API at ``--api`` (``$WORLD_AWS_API``),
SigV4-signed with your AWS credentials exactly as the operator commands sign
theirs (by default for ``*.execute-api.*`` hosts; ``--sign``/``--no-sign``). The
UI and the API thus share one origin and no credential ever reaches the browser.
``world-aws dev`` serves the same UI in front of its own API.
"""

from __future__ import annotations

import argparse
import base64
import errno
import threading
from typing import Any, TextIO

from world_aws.api.http import error_response
from world_aws.api.server import Backend, serve_backend
from world_aws.cli.client import ApiClient, Unreachable, api_url
from world_aws.cli.dev import port, stop_on_signals
from world_aws.errors import BadInput

UI_DEFAULT_PORT = 8788
# The answer's headers the browser needs; hop-by-hop and AWS ones stay behind.
PASSED_HEADERS = ("content-type", "retry-after", "location", "allow")


def add_command(sub: Any) -> None:
    """Add ``ui`` to the ``world-aws`` parser's subparsers."""
    ui = sub.add_parser(
        "ui", help="the web UI on 127.0.0.1 for a deployed API (requests signed), until Ctrl-C"
    )
    # SUPPRESS: a --api/--sign given before `ui` (the top-level parser's) is not reset here.
    ui.add_argument(
        "--api", metavar="URL", default=argparse.SUPPRESS, help="the API's base URL (default: $WORLD_AWS_API)"
    )
    ui.add_argument(
        "--sign",
        action=argparse.BooleanOptionalAction,
        default=argparse.SUPPRESS,
        help="SigV4-sign requests with your AWS credentials (default: only for *.execute-api.* hosts)",
    )
    ui.add_argument(
        "--port",
        type=port,
        default=UI_DEFAULT_PORT,
        help=f"the UI's port on 127.0.0.1 (default {UI_DEFAULT_PORT})",
    )
    ui.set_defaults(func=run)


def proxy_backend(client: ApiClient) -> Backend:
    """Each request passed to ``client``'s API as it came (signed if the client signs); 502 if unreachable."""

    def answer(method: str, target: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
        lowered = {name.lower(): value for name, value in headers.items()}
        try:
            status, got, data = client.forward(method, target, body, lowered.get("content-type"))
        except Unreachable as exc:
            return error_response(502, "Unreachable", str(exc)).to_event_response()
        passed = {name.lower(): value for name, value in got.items() if name.lower() in PASSED_HEADERS}
        encoded = base64.b64encode(data).decode("ascii")
        return {"statusCode": status, "headers": passed, "body": encoded, "isBase64Encoded": True}

    return answer


def run(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until SIGINT/SIGTERM. Must run on the main thread (it installs signal handlers)."""
    try:
        client = ApiClient(api_url(ns.api), sign=ns.sign)
    except BadInput as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    stop = threading.Event()
    with stop_on_signals(stop):
        try:
            server = serve_backend(proxy_backend(client), port=ns.port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            err.write(f"world-aws: port {ns.port} on 127.0.0.1 is in use; choose one with --port\n")
            return 2
        try:
            out.write(f"world-aws ui: {server.url}/ui/ for {client.base_url}\nPress Ctrl-C to stop.\n")
            out.flush()
            while not stop.wait(0.2):
                pass
        finally:
            server.stop()
        out.write("world-aws ui: stopped\n")
    return 0
