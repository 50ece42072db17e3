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
3. **Cheap transaction rollback.** moto 5.2's ``transact_write_items``
   deep-copies every table a transaction touches, once per action, to be able
   to roll back: its cost grows with the table, so a test that writes a few
   thousand items slows to seconds per transaction. Under the lock nothing
   else changes the table during a transaction, so the patch snapshots only
   the items the transaction names and restores those on cancellation: the
   same all-or-nothing outcome.

Everything is restored on exit. Only tests use this module.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from moto.core import botocore_stubber
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.table import Table as MotoTable

_RECEIVE_TARGET = "AmazonSQS.ReceiveMessage"
_SHORT_POLL_PAUSE = 0.02


@contextmanager
def serialised_moto() -> Iterator[None]:
    """Apply the three patches of the module docstring inside the block."""
    stubber = botocore_stubber.BotocoreStubber
    original_process = stubber.process_request
    original_transact = DynamoDBBackend.transact_write_items
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

    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        with lock:
            snapshot = _touched_items(self, transact_items)
            had_deepcopy = "__deepcopy__" in MotoTable.__dict__
            previous = MotoTable.__dict__.get("__deepcopy__")
            # moto's own backup becomes the table itself (its "rollback" a no-op) ...
            MotoTable.__deepcopy__ = lambda table, memo: table  # type: ignore[attr-defined]
            try:
                original_transact(self, transact_items)
            except Exception:
                # ... and the touched items are put back as they were instead.
                _restore(self, snapshot)
                raise
            finally:
                if had_deepcopy:
                    MotoTable.__deepcopy__ = previous  # type: ignore[attr-defined]
                else:
                    del MotoTable.__deepcopy__  # type: ignore[attr-defined]

    stubber.process_request = process_request  # type: ignore[method-assign]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    try:
        yield
    finally:
        stubber.process_request = original_process  # type: ignore[method-assign]
        DynamoDBBackend.transact_write_items = original_transact  # type: ignore[method-assign]


Snapshot = list[tuple[str, dict[str, Any], dict[str, Any] | None]]


def _touched_items(backend: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> Snapshot:
    """(table, key, attributes or None) of every item the transaction names, as it is now."""
    snapshot: Snapshot = []
    for action in transact_items:
        try:
            op_type, op = next(iter(action.items()))
            table_name = op["TableName"]
            table = backend.get_table(table_name)
            if op_type == "Put":
                attrs = op["Item"]
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]
            current = backend.get_item(table_name, key)
        except Exception:
            continue
        snapshot.append(
            (table_name, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None)
        )
    return snapshot


def _restore(backend: DynamoDBBackend, snapshot: Snapshot) -> None:
    for table_name, key, attributes in reversed(snapshot):
        if attributes is None:
            try:
                backend.delete_item(table_name, key)
            except Exception:
                continue
        else:
            backend.put_item(table_name, attributes)


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
