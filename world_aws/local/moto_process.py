"""``MotoProcess``: the embedded stack (``EmbeddedAws``) in a forked child process, started first.

``world-aws run`` spends most of a trivial run starting its stack: importing moto and
boto3, loading moto's service backends, provisioning the template's resources. All of
it is CPU under one interpreter lock, so a thread cannot overlap it with the rest of
the command's start (importing the runtime and the user's app, building the World).
A child process can: the command forks it before importing anything heavy
(``world_aws._entry``), the child builds the stack on the other core and reports its
endpoint and environment through a pipe, and the parent reads that report when it
needs the stack. The child serves until the parent closes the control pipe (or dies):
its moto state goes with it, as an embedded stack's does with its process.

Only on Linux, where ``fork`` of a process that has started no thread is safe; the
command falls back to the in-process stack elsewhere, and whenever the child fails.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import traceback
from typing import Any

LOOPBACK = "127.0.0.1"  # never 0.0.0.0: nothing outside this machine may reach it

# What the child writes for "answer the long polls now" (the parent's consumers are stopping).
_RELEASE = b"r"


def fork_available() -> bool:
    """Whether a child can be forked safely here (Linux, this thread the only one)."""
    import threading

    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


class MotoProcess:
    """An ``EmbeddedAws`` (``apply_settings=False``) in a forked child; ``report()`` waits for it."""

    def __init__(self, region: str = "us-east-1") -> None:
        # Bound and listening before the fork: the endpoint is known here at once (clients can be
        # built while the child starts), and requests sent early wait in the socket's backlog.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((LOOPBACK, 0))
        listener.listen(128)
        self.region = region
        self.endpoint_url = f"http://{LOOPBACK}:{listener.getsockname()[1]}"
        report_r, report_w = os.pipe()
        control_r, control_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; measured by bench.firstrun, tested via the CLI
            os.close(report_r)
            os.close(control_w)
            _serve(report_w, control_r, listener.fileno(), region)
        listener.close()
        os.close(report_w)
        os.close(control_r)
        self.pid = pid
        self._report_fd = report_r
        self._control_fd: int | None = control_w
        self._report: dict[str, Any] | None = None

    def report(self) -> dict[str, Any]:
        """``{"env": ...}`` (``EmbeddedAws.env()``) once the child's stack is up.

        Raises:
            RuntimeError: the child failed to start its stack (its traceback in the message).
        """
        if self._report is None:
            chunks = []
            while chunk := os.read(self._report_fd, 65536):
                chunks.append(chunk)
            os.close(self._report_fd)
            text = b"".join(chunks).decode()
            self._report = json.loads(text) if text else {"error": "the stack's process exited"}
        if "error" in self._report:
            raise RuntimeError(f"the embedded stack's process failed: {self._report['error']}")
        return self._report

    def release_long_polls(self) -> None:
        """Have the child answer every waiting long poll now (best effort)."""
        if self._control_fd is not None:
            try:
                os.write(self._control_fd, _RELEASE)
            except OSError:
                pass

    def stop(self) -> None:
        """End the child (it exits when the control pipe closes) and reap it. Idempotent."""
        if self._control_fd is None:
            return
        os.close(self._control_fd)
        self._control_fd = None
        if self._report is None:
            try:
                os.close(self._report_fd)
            except OSError:
                pass
        os.waitpid(self.pid, 0)


def _serve(report_fd: int, control_fd: int, listen_fd: int, region: str) -> None:  # pragma: no cover - child
    """The child: build the stack, report it, serve until the control pipe closes; never returns."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    code = 0
    try:
        from world_aws.local.embedded import EmbeddedAws

        aws = EmbeddedAws(region=region, apply_settings=False, listen_fd=listen_fd)
        report = {"env": aws.env()}
    except BaseException:
        os.write(report_fd, json.dumps({"error": traceback.format_exc()}).encode())
        os._exit(1)
    try:
        os.write(report_fd, json.dumps(report).encode())
        os.close(report_fd)
        while command := os.read(control_fd, 1):
            if command == _RELEASE:
                aws.app.release_long_polls()
        aws.app.release_long_polls()
    except BaseException:
        code = 1
    os._exit(code)
