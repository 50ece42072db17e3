"""Billing arithmetic of the services world-aws uses: item sizes, request units, SQS request chunks.

Pure functions over DynamoDB's wire form (``{"S": ...}``, ``{"N": ...}``, ``{"B": ...}``
attribute values, as boto3's low-level client sends and returns them); the meter
(``bench.meter``) feeds them the items it reads around each request.

DynamoDB (on-demand; sources: "DynamoDB item sizes and formats",
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html;
"Amazon DynamoDB Transactions: How it works", capacity management,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html;
global secondary index writes,
https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):

* item size: the UTF-8 bytes of every attribute name plus its value: a string its
  UTF-8 bytes, a binary its raw bytes, a number 1 byte per two significant digits
  plus 1, a boolean or null 1, a list or map 3 bytes plus 1 per element plus the
  elements (map keys count as names), a set the sum of its members;
* a write costs 1 WRU per started KB of the *larger* of the item's size before and
  after it (a delete: the item deleted; a failed condition: the existing item;
  never less than 1), twice that inside ``TransactWriteItems``;
* a read costs 1 RRU per started 4 KB strongly consistent, half that eventually
  consistent, twice that transactional; a Query sums the sizes of the items it
  read and rounds once; a read that finds nothing still costs the minimum; a
  ``ConditionCheck`` inside a transaction is billed as a transactional read of the
  item it checks (an assumption the docs leave open: one public measurement
  reports 2 WRU instead; on world-aws's path only ``hook_received`` uses one);
* a GSI write costs 1 WRU per started KB of the projected entry (table keys, index
  keys, projected attributes): one when an item enters or leaves the index or
  changes a projected attribute, two (delete and put) when an index key changes,
  none when the write touches nothing the index holds. Index upkeep is not
  transactional, so it is not doubled.

SQS (https://aws.amazon.com/sqs/pricing/): every API action is a request, and each
64 KB chunk of its payload is billed as one more: a 70 KB send is 2 requests. A
batch counts its entries' payload together; an empty receive is one request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from world_aws.aws.codec.sizes import WRITE_UNIT_BYTES, Attributes, item_size, number_size, value_size

# Item sizes by DynamoDB's rules (the first bullet above) and the write unit live in the
# library, which sizes a run item's tail by them: one rule for the meter and the writer.
__all__ = ["WRITE_UNIT_BYTES", "Attributes", "item_size", "number_size", "value_size"]

KB = 1024
READ_UNIT_BYTES = 4 * KB
SQS_CHUNK_BYTES = 64 * KB
TRANSACTION_FACTOR = 2


def write_units(before: int, after: int, *, transactional: bool = False) -> int:
    """WRU of one write of an item of ``before`` bytes into one of ``after`` bytes (0 = absent)."""
    units = max(1, math.ceil(max(before, after) / WRITE_UNIT_BYTES))
    return units * (TRANSACTION_FACTOR if transactional else 1)


def read_units(size: int, *, consistent: bool = True, transactional: bool = False) -> float:
    """RRU of reading ``size`` bytes (one item, or a Query's summed items) in one request."""
    units = float(max(1, math.ceil(size / READ_UNIT_BYTES)))
    if transactional:
        return units * TRANSACTION_FACTOR
    return units if consistent else units / 2


@dataclass(frozen=True, slots=True)
class SecondaryIndex:
    """What a GSI holds: its key attributes and the non-key attributes it projects (None = ALL)."""

    name: str
    keys: tuple[str, ...]
    projected: tuple[str, ...] | None


def index_entry(
    item: Attributes | None, index: SecondaryIndex, table_keys: Sequence[str]
) -> dict[str, Any] | None:
    """The item as ``index`` stores it, or None when the item is not in the (sparse) index."""
    if not item or any(key not in item for key in index.keys):
        return None
    if index.projected is None:
        return dict(item)
    wanted = {*table_keys, *index.keys, *index.projected}
    return {name: value for name, value in item.items() if name in wanted}


def index_write_units(
    before: Attributes | None, after: Attributes | None, index: SecondaryIndex, table_keys: Sequence[str]
) -> int:
    """WRU that keeping ``index`` up to date costs for a write turning ``before`` into ``after``."""
    old, new = index_entry(before, index, table_keys), index_entry(after, index, table_keys)
    if old is None and new is None:
        return 0
    if old is None or new is None:
        return write_units(item_size(old), item_size(new))
    if any(old[key] != new[key] for key in index.keys):
        return write_units(item_size(old), 0) + write_units(0, item_size(new))
    if old != new:
        return write_units(0, item_size(new))
    return 0


def sqs_requests(payload_bytes: int) -> int:
    """Billed requests of one SQS action carrying ``payload_bytes``: one per started 64 KB, at least 1."""
    return max(1, math.ceil(payload_bytes / SQS_CHUNK_BYTES))


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """Payload bytes of one SQS message: its body and each attribute's name, type and value."""
    size = len(body.encode("utf-8"))
    for name, attribute in (attributes or {}).items():
        size += len(name.encode("utf-8")) + len(str(attribute.get("DataType", "")).encode("utf-8"))
        if attribute.get("StringValue") is not None:
            size += len(str(attribute["StringValue"]).encode("utf-8"))
        if attribute.get("BinaryValue") is not None:
            size += len(bytes(attribute["BinaryValue"]))
    return size
