"""Patches that make in-process moto behave like AWS under threads, and fast enough to test with.

:func:`serialised_moto` applies, for the duration of a ``with`` block:

1. **One lock around moto's request processing.** moto has no per-request
   lock, so two racing conditional writes can both succeed
   (aws-and-moto-notes §3.3), which AWS never allows. With the lock every
   request is atomic, as real single-item conditions and transactions are.
2. **SQS long polls as short polls.** A ``ReceiveMessage`` with
   ``WaitTimeSeconds`` waits *inside* moto; under the lock it would stall every
   other request (and no message could arrive while it waits). It is replayed
   as polls with ``WaitTimeSeconds=0``, each under the lock, with a pause
   outside it, until a message comes or the wait is over: the same answer.
3. **Table-size-independent DynamoDB** (``world_aws.local.moto_speedups``,
   shared with the embedded default): transactions roll back by snapshotting
   only the items they name, and a Query sees only its partition. Installed
   once per process and left on: the results are moto's own.

Patches 1 and 2 are restored on exit. Only tests use this module.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core import botocore_stubber

from world_aws.local import moto_speedups

_RECEIVE_TARGET = "AmazonSQS.ReceiveMessage"
_SHORT_POLL_PAUSE = 0.02


@contextmanager
def serialised_moto() -> Iterator[None]:
    """Apply the patches of the module docstring inside the block."""
    stubber = botocore_stubber.BotocoreStubber
    original_process = stubber.process_request
    moto_speedups.install()
    lock = threading.RLock()

    def process_request(self: Any, request: Any) -> Any:
        wait = _long_poll_wait(request)
        if wait <= 0:
            with lock:
                return original_process(self, request)
        deadline = time.monotonic() + wait
        while True:
            with lock:
                response = original_process(self, request)
            if _has_messages(response) or time.monotonic() >= deadline:
                return response
            time.sleep(_SHORT_POLL_PAUSE)

    stubber.process_request = process_request  # type: ignore[method-assign]
    try:
        yield
    finally:
        stubber.process_request = original_process  # type: ignore[method-assign]


def _long_poll_wait(request: Any) -> float:
    """The WaitTimeSeconds of an SQS ReceiveMessage (rewritten to 0 in ``request``), else 0."""
    target = request.headers.get("X-Amz-Target")
    if isinstance(target, bytes):
        target = target.decode()
    if target != _RECEIVE_TARGET or not request.body:
        return 0.0
    body = json.loads(request.body)
    wait = float(body.get("WaitTimeSeconds") or 0)
    if wait > 0:
        body["WaitTimeSeconds"] = 0
        request.body = json.dumps(body).encode()
    return wait


def _has_messages(response: Any) -> bool:
    try:
        _status, _headers, body = response
        return bool(json.loads(body or "{}").get("Messages"))
    except (TypeError, ValueError):
        return True
