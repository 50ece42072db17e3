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
  patterns on every request, about 2 ms each, the same answer every time.
"""

from __future__ import annotations

import threading
from typing import Any

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

from world_aws.local.serial_wsgi import SerializedApp

LOOPBACK = "127.0.0.1"
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
            LOOPBACK, port, self.app, threaded=True, request_handler=MotoRequestHandler, fd=listen_fd
        )
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
        self._thread.join()
