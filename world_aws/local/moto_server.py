"""``LoopbackMotoServer``: moto's WSGI app, serialised, served on 127.0.0.1 from a thread.

What moto's ``ThreadedMotoServer`` does, with what the embedded default needs
built in rather than patched on:

* every request goes through ``SerializedApp`` (one at a time, long polls without
  holding the lock);
* ``stop()`` returns as soon as the serving loop notices (``serve_forever`` checks
  for a shutdown every ``poll_interval``; moto's keeps werkzeug's default 0.5 s,
  the time a stop took);
* the service a request is for is looked up once per host name: moto's dispatcher
  lists its package directory (about 200 ``isdir`` calls) and tries its URL
  patterns on every request, about 2 ms each, the same answer every time;
* connections are kept alive (``_KeepAliveHandler``): werkzeug's development server
  closes every one after its response, so each request cost a TCP connection, a
  server thread and a client reconnect, and lingered 10 ms draining the socket.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from world_aws.local.serial_wsgi import SerializedApp

LOG = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
_HOP_BY_HOP = {"connection", "content-length", "transfer-encoding", "keep-alive"}
# How often the serving loop looks for a stop request: a stop takes at most this long.
SHUTDOWN_POLL_SECONDS = 0.02


class _Dispatcher(DomainDispatcherApplication):
    """moto's dispatcher with its host-to-service lookup remembered (a function of the host alone)."""

    def __init__(self) -> None:
        super().__init__(create_backend_app)
        self._backends: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        try:
            return self._backends[host]
        except KeyError:
            backend = self._backends[host] = super().get_backend_for_host(host)
            return backend


class _KeepAliveHandler(MotoRequestHandler):
    """moto's request handler with HTTP/1.1 keep-alive, for requests whose body has a length.

    werkzeug's ``run_wsgi`` always answers ``Connection: close`` (``http.server`` cannot
    find the next request line after a body the app left unread) and then waits up to
    10 ms for more input to discard. Here the body is read whole before the app runs
    (botocore always sends ``Content-Length``), the response is materialised (as
    ``SerializedApp`` does anyway) and sent with its length, and the connection stays
    open for the client's next request. A chunked request body, or an app that raises,
    takes werkzeug's way (and its close).
    """

    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # An answer is one write, but without this a small one can still wait for the
        # client's delayed acknowledgement of the last (Nagle's algorithm: up to 40 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.open_connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.open_connections.discard(self.connection)  # type: ignore[attr-defined]
        super().finish()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        # werkzeug's access log line per request cost more than many of moto's answers (the
        # path decoded, the line styled and formatted, a timestamp): only a server error
        # is worth one here (a refused condition, a 400, is the World's everyday answer).
        if str(code).startswith("5"):
            super().log_request(code, size)

    def date_time_string(self, timestamp: float | None = None) -> str:
        # The ``Date`` header, formatted once a second rather than once an answer.
        if timestamp is not None:
            return super().date_time_string(timestamp)
        second = int(time.time())
        last: tuple[int, str] = self.server.last_date_header  # type: ignore[attr-defined]
        if last[0] != second:
            last = (second, super().date_time_string(second))
            self.server.last_date_header = last  # type: ignore[attr-defined]
        return last[1]

    def run_wsgi(self) -> None:
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or (length is None and self.command not in ("GET", "HEAD")):
            super().run_wsgi()
            self.close_connection = True
            return
        if self.headers.get("Expect", "").lower().strip(" \t") == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = self.rfile.read(int(length)) if length else b""
        environ = self.environ = self.make_environ()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            answer["status"], answer["headers"] = status, headers
            return lambda data: answer.setdefault("written", []).append(data)

        try:
            result = self.server.app(environ, start_response)
            try:
                chunks = [*answer.get("written", []), *result]
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception:
            # As werkzeug answers an app that raises (moto's handlers answer their own errors).
            LOG.exception("moto raised on %s %s", self.command, self.path)
            self.close_connection = True
            self.send_error(500)
            return
        data = b"".join(chunks)
        code, _, reason = str(answer["status"]).partition(" ")
        self.send_response(int(code), reason)
        declared = None
        for key, value in answer["headers"]:
            if key.lower() == "content-length":
                declared = value
            if key.lower() not in _HOP_BY_HOP:
                self.send_header(key, value)
        # A HEAD answer keeps the length of the body it leaves out.
        length_sent = declared if self.command == "HEAD" and declared else str(len(data))
        self.send_header("Content-Length", length_sent)
        # Status line, headers and body in one write (``end_headers`` would send the
        # headers on their own).
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(data)
        self.flush_headers()
        self.wfile.flush()


class LoopbackMotoServer:
    """moto on ``127.0.0.1:port`` (0: a free port), started on construction.

    Attributes:
        app: the serialised WSGI app every request goes through.
        address: the ``(host, port)`` the socket is bound to.
        endpoint_url: ``http://127.0.0.1:<port>``.
    """

    def __init__(self, port: int = 0, *, listen_fd: int | None = None) -> None:
        self.app = SerializedApp(_Dispatcher())
        # ``listen_fd``: a socket already bound to loopback and listening (the embedded
        # stack's process is handed one, so its parent knows the port before it serves).
        self._server = make_server(
            LOOPBACK, port, self.app, threaded=True, request_handler=_KeepAliveHandler, fd=listen_fd
        )
        self._server.open_connections = set()  # type: ignore[attr-defined]
        self._server.last_date_header = (0, "")  # type: ignore[attr-defined]
        host, bound = self._server.server_address[:2]
        self.address = (str(host), int(bound))
        self.endpoint_url = f"http://{host!s}:{bound}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name="world-aws-moto",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Answer waiting long polls, stop serving, close the socket."""
        self.app.release_long_polls()
        self._server.shutdown()
        self._server.server_close()
        # Kept-alive connections hold a thread each, waiting for a next request: end them.
        for connection in list(self._server.open_connections):  # type: ignore[attr-defined]
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join()
