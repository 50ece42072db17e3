"""Make moto's DynamoDB cost per request independent of the table's size (local runs and tests).

moto 5 answers two of world-aws's most frequent requests in time that grows with
*every* item of the table, so a long ``world-aws dev`` session slowed down run by
run (a 16-branch fan-out: 3 s on a fresh table, 16-25 s after 30 runs):

1. ``TransactWriteItems`` deep-copies each table it touches, once per action,
   to be able to roll back. Here the rollback snapshots only the items the
   transaction names and puts those back on cancellation: the same
   all-or-nothing outcome, at the cost of the items involved.
2. ``Query`` on a table collects and sorts ``all_items()`` of the table, then
   filters on the partition key and the range condition, sizing every item. Here a
   base-table Query (no index) sees only its partition's items whose string range
   key meets the condition (on its own thread): the same results, at the cost of the
   items that match (a 256-way fan-out's run holds ~1,500 items, and every
   last-completer check queried all of them).

3. Every JSON response renders each attribute value through moto's generic shape
   walker, half of its time per request: ``moto_fast_json`` writes them directly.
4. Every request lists the members of its handler class (``inspect.getmembers``,
   about 1 ms) and converts names from camel case: both answers depend on their
   argument alone, so each is computed once (``_remember_pure_helpers``).
5. An SQS receive checks each message it hands out against the queue's retention
   period by asking for the queue's attributes, which counts every message of the
   queue three times (visible, delayed, in flight) to answer one number: a receive
   from a queue of n messages cost O(n) per message received. Here the check reads
   the period itself (``_cheap_retention_check``). And each of those counts reads the
   clock once per message through two ``datetime`` constructions; moto's SQS module
   gets the same number from ``time.time()`` (``_fast_sqs_clock``).

The first two rely on requests being served one at a time, as the embedded default
(``SerializedApp``) and the tests (``testing.moto_patches``) arrange; the
transaction patch also holds its own lock around snapshot, apply and restore.

``install()`` patches moto's classes once per process and leaves them patched
(the results are moto's own); the marker is kept on moto's classes. If moto's
internals are not what these patches expect, they stay off and moto runs as it
is: slower, never wrong.
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from world_aws.local import moto_fast_json

LOG = logging.getLogger(__name__)

_MARKER = "_world_aws_speedups"

Snapshot = list[tuple[str, dict[str, Any], dict[str, Any] | None]]


def install() -> bool:
    """Patch moto's transactions, queries and attribute values (idempotent). True when the patches are on."""
    moto_fast_json.install()
    _remember_pure_helpers()
    _cheap_retention_check()
    _fast_sqs_clock()
    try:
        from moto.dynamodb.models import DynamoDBBackend
        from moto.dynamodb.models.table import Table
    except ImportError:  # moto is not installed: nothing to speed up
        return False
    if getattr(Table, _MARKER, False):
        return True
    if not _fits(Table, DynamoDBBackend):
        LOG.warning("moto's DynamoDB internals changed; running without world-aws's speedups")
        return False
    DynamoDBBackend.transact_write_items = _cheap_transactions(  # type: ignore[method-assign]
        DynamoDBBackend.transact_write_items, Table
    )
    Table.query, Table.all_items = _partition_query(Table.query, Table.all_items)  # type: ignore[method-assign]
    setattr(Table, _MARKER, True)
    return True


def _remember_pure_helpers() -> None:
    """``method_names_from_class`` and ``camelcase_to_underscores`` remembered per argument.

    moto modules import them by name, so the loaded modules that hold the originals
    get the remembering ones too; modules loaded later import them from ``moto.core.utils``.
    """
    try:
        from moto.core import utils
    except ImportError:
        return
    for name in ("method_names_from_class", "camelcase_to_underscores"):
        original = getattr(utils, name, None)
        if original is None or getattr(original, _MARKER, False):
            continue
        remembered = functools.lru_cache(maxsize=4096)(original)  # names and classes: a few hundred
        setattr(remembered, _MARKER, True)
        for module in [m for n, m in sys.modules.items() if n.startswith("moto") and m is not None]:
            if getattr(module, name, None) is original:
                setattr(module, name, remembered)


def _cheap_retention_check() -> None:
    """``SQSBackend.is_message_valid_based_on_retention_period`` without computing every attribute."""
    try:
        from moto.sqs.models import SQSBackend
    except ImportError:
        return
    original = SQSBackend.is_message_valid_based_on_retention_period
    if getattr(original, _MARKER, False):
        return

    def is_message_valid_based_on_retention_period(self: Any, queue_name: str, message: Any) -> bool:
        period = getattr(self.get_queue(queue_name), "message_retention_period", None)
        if period is None:  # not the attribute this patch expects: moto's own way
            return bool(original(self, queue_name, message))
        return bool(int(period) + message.sent_timestamp / 1000 > time.time())

    setattr(is_message_valid_based_on_retention_period, _MARKER, True)
    SQSBackend.is_message_valid_based_on_retention_period = is_message_valid_based_on_retention_period  # type: ignore[method-assign]


def _fast_sqs_clock() -> None:
    """moto's SQS module reads "now" (seconds and milliseconds since the epoch) from ``time.time()``.

    The same value moto's ``unix_time()`` computes from ``utcnow() - utcfromtimestamp(0)``;
    a given datetime is converted by moto's own function as before.
    """
    try:
        from moto.core import utils
        from moto.sqs import models
    except ImportError:
        return
    if getattr(getattr(models, "unix_time", None), _MARKER, False):
        return
    original_unix_time = utils.unix_time

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else float(original_unix_time(dt))

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    for helper in (unix_time, unix_time_millis):
        setattr(helper, _MARKER, True)
    if getattr(models, "unix_time", None) is original_unix_time:
        models.unix_time = unix_time  # type: ignore[attr-defined]
    if getattr(models, "unix_time_millis", None) is utils.unix_time_millis:
        models.unix_time_millis = unix_time_millis  # type: ignore[attr-defined]


def _fits(table: type, backend: type) -> bool:
    """The moto internals both patches rely on are there."""
    try:
        query = inspect.signature(table.query)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return False
    return (
        {"hash_key", "index_name"} <= set(query.parameters)
        and callable(getattr(table, "all_items", None))
        and callable(getattr(backend, "transact_write_items", None))
        and callable(getattr(backend, "get_item", None))
    )


def _partition_query(
    original_query: Callable[..., Any], original_all_items: Callable[..., Any]
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``Table.query`` and ``Table.all_items`` such that a base-table query reads its partition only.

    moto's query reads ``self.all_items()``; for the duration of a base-table query
    that answers with the queried partition, on the querying thread only (so a
    concurrent caller elsewhere still sees the whole table).
    """
    signature = inspect.signature(original_query)
    local = threading.local()

    def all_items(self: Any) -> Any:
        scope = getattr(local, "scope", None)
        if scope is not None and scope[0] is self:
            return list(scope[1].values())
        return original_all_items(self)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        hash_key = bound.arguments.get("hash_key")
        if bound.arguments.get("index_name") or hash_key is None or not self.range_key_attr:
            return original_query(self, *args, **kwargs)
        previous = getattr(local, "scope", None)
        partition = self.items.get(hash_key) or {}
        local.scope = (
            self,
            _in_range(partition, bound.arguments.get("range_comparison"), bound.arguments.get("range_objs")),
        )
        try:
            return original_query(self, *args, **kwargs)
        finally:
            local.scope = previous

    return query, all_items


# String range-key conditions the World's queries use; moto applies every one itself
# afterwards, so this only narrows what it sorts, sizes and filters.
_STRING_RANGES: dict[str, Callable[[str, list[str]], bool]] = {
    "BEGINS_WITH": lambda key, bounds: key.startswith(bounds[0]),
    "BETWEEN": lambda key, bounds: bounds[0] <= key <= bounds[1],
    ">": lambda key, bounds: key > bounds[0],
    ">=": lambda key, bounds: key >= bounds[0],
    "<": lambda key, bounds: key < bounds[0],
    "<=": lambda key, bounds: key <= bounds[0],
}


def _in_range(partition: dict[Any, Any], comparison: object, objs: object) -> dict[Any, Any]:
    """The partition's items whose (string) range key meets ``comparison``: all of them for any other.

    DynamoDB orders string keys by their UTF-8 bytes, which is the order of their code
    points, which is how Python compares ``str``: the same answer as moto's own test.
    """
    match = _STRING_RANGES.get(str(comparison)) if comparison else None
    bounds = [getattr(o, "value", None) for o in objs] if isinstance(objs, list) else []
    if match is None or not bounds or not all(isinstance(b, str) for b in bounds):
        return partition
    strings = [str(b) for b in bounds]
    return {
        key: item
        for key, item in partition.items()
        if isinstance(getattr(key, "value", None), str) and match(key.value, strings)
    }


def _cheap_transactions(original: Callable[..., Any], table_class: type) -> Callable[..., Any]:
    # One lock per process, created with the patch: snapshot, apply and restore are one step.
    lock = threading.RLock()

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with lock:
            snapshot = _touched_items(self, transact_items)
            had_deepcopy = "__deepcopy__" in table_class.__dict__
            previous = table_class.__dict__.get("__deepcopy__")
            # moto's own backup becomes the table itself (its "rollback" a no-op) ...
            table_class.__deepcopy__ = lambda table, memo: table  # type: ignore[attr-defined]
            try:
                original(self, transact_items)
            except Exception:
                # ... and the touched items are put back as they were instead.
                _restore(self, snapshot)
                raise
            finally:
                if had_deepcopy:
                    table_class.__deepcopy__ = previous  # type: ignore[attr-defined]
                else:
                    del table_class.__deepcopy__  # type: ignore[attr-defined]

    return transact_write_items


def _touched_items(backend: Any, transact_items: list[dict[str, Any]]) -> Snapshot:
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


def _restore(backend: Any, snapshot: Snapshot) -> None:
    for table_name, key, attributes in reversed(snapshot):
        if attributes is None:
            try:
                backend.delete_item(table_name, key)
            except Exception:
                continue
        else:
            backend.put_item(table_name, attributes)
