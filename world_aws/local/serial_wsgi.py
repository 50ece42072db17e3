"""``SerializedApp``: a WSGI wrapper that runs one request at a time.

moto keeps no per-request lock: two conditional writes that race through a
threaded server can both succeed (aws-and-moto-notes §3.3), which AWS never
allows. Running every request under one lock makes each request atomic, as the
real services are for single-item conditions and transactions.

One exception needs care: an SQS ``ReceiveMessage`` with ``WaitTimeSeconds``
waits *inside* moto. Under the lock it would stall every other request (and no
message could arrive while it waits). So a long poll is replayed as a series of
short polls (``WaitTimeSeconds: 0``), each under the lock, until a message comes
or the wait is over: the same answer a long poll gives. Between two short polls it
waits outside the lock, on ``QueueSignals``, until a send or a visibility change
to its queue (or their delay) may have made a message visible: no fixed sleep, so
an idle queue costs one short poll per ``WaitTimeSeconds`` and a message is
received as soon as it is sent. ``release_long_polls()`` ends every wait (for a
prompt stop). (Only the JSON protocol that current botocore uses is recognised; a
query-protocol long poll holds the lock while it waits.)
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from world_aws.local.queue_signals import SIGNALLING_TARGETS, QueueSignals

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]

_RECEIVE_TARGET = "AmazonSQS.ReceiveMessage"


class SerializedApp:
    """Wraps a WSGI app so that its requests run one at a time.

    Args:
        app: the WSGI app (moto's ``DomainDispatcherApplication``).
        signals: what long polls wait on between their short polls.
    """

    def __init__(self, app: WsgiApp, *, signals: QueueSignals | None = None) -> None:
        self.app = app
        self.lock = threading.RLock()
        self.signals = signals or QueueSignals()
        # Requests served that may have changed state (an empty short poll of a long poll is
        # not counted): ``world-aws dev --state`` saves a snapshot only when this moved.
        self.served = 0

    def __call__(self, environ: Environ, start_response: StartResponse) -> list[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target == _RECEIVE_TARGET:
            body = _read_body(environ)
            wait = _requested_wait(body)
            if wait > 0:
                return self._long_poll(environ, start_response, body, wait)
        if target not in SIGNALLING_TARGETS:
            with self.lock:
                self.served += 1
                return self._run(environ, start_response)
        body = _read_body(environ)
        with self.lock:
            self.served += 1
            chunks = self._run(environ, start_response)
        self.signals.record(str(target), body)
        return chunks

    def release_long_polls(self) -> None:
        """Answer every long poll after its next short poll, now and from now on (before a stop)."""
        self.signals.release()

    def _run(self, environ: Environ, start_response: StartResponse) -> list[bytes]:
        # Materialise the response under the lock: a lazy iterable would run the
        # backend after the lock is released.
        result = self.app(environ, start_response)
        try:
            return list(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    def _long_poll(
        self, environ: Environ, start_response: StartResponse, body: dict[str, Any], wait: float
    ) -> list[bytes]:
        short = json.dumps({**body, "WaitTimeSeconds": 0}).encode("utf-8")
        url = str(body.get("QueueUrl"))
        deadline = time.monotonic() + wait
        while True:
            mark = self.signals.mark(url)  # before the poll: a send during it still wakes the wait
            response = _CapturedResponse()
            attempt = {**environ, "wsgi.input": io.BytesIO(short), "CONTENT_LENGTH": str(len(short))}
            with self.lock:
                chunks = self._run(attempt, response.start_response)
                done = not response.status.startswith("200") or _has_messages(chunks)
                self.served += done
            if done or self.signals.released or time.monotonic() >= deadline:
                start_response(response.status, response.headers, response.exc_info)
                return chunks
            self.signals.wait(url, mark, deadline)


class _CapturedResponse:
    """Holds what the app passed to ``start_response`` until we decide to answer."""

    def __init__(self) -> None:
        self.status = ""
        self.headers: list[tuple[str, str]] = []
        self.exc_info: Any = None

    def start_response(
        self, status: str, headers: list[tuple[str, str]], exc_info: Any = None
    ) -> Callable[[bytes], None]:
        self.status, self.headers, self.exc_info = status, headers, exc_info
        return lambda _data: None


def _read_body(environ: Environ) -> dict[str, Any]:
    """Read (and put back) a JSON request body; ``{}`` if it is not JSON."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    raw = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(raw)
    try:
        parsed = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _requested_wait(body: dict[str, Any]) -> float:
    try:
        return float(body.get("WaitTimeSeconds") or 0)
    except (TypeError, ValueError):
        return 0.0


def _has_messages(chunks: list[bytes]) -> bool:
    try:
        parsed = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return True  # not ours to judge: hand it back
    return bool(parsed.get("Messages")) if isinstance(parsed, dict) else True
