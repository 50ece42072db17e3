"""``DynamoGateStore``: debounce windows, batches and singleton keys, one versioned item per scope.

Item ``pk = flow#<scope>``, ``sk = gate`` holds the open window or batch (run id,
opened, due, inputs), the closed ones whose run's start is not confirmed yet, the
items of recently started batches and a singleton key's holder. Every change is a
consistent GetItem and a PutItem conditioned on the version read (as the admission
store's, ``aws/write/admission.py``): of two starts that read one state only one
writes it, the other decides again on what it finds. The policy is the contract's
(``world_aws.contract.coalesce``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Item, Table
from world_aws.aws.write.admission import at_us, change_versioned
from world_aws.contract.clock import Clock
from world_aws.contract.coalesce import Gate, Pending
from world_aws.contract.coalesce import Item as Input

A = TypeVar("A")


class DynamoGateStore:
    """Gates in the world's table."""

    def __init__(self, table: Table, clock: Clock) -> None:
        self._table = table
        self._clock = clock

    def get(self, scope: str) -> Gate:
        return _gate_from(scope, self._table.get(keys.flow_key(scope, "gate")))

    def change(self, scope: str, rule: Callable[[Gate, datetime], tuple[Gate, A]]) -> A:
        key = keys.flow_key(scope, "gate")
        return change_versioned(
            self._table, self._clock, key, lambda item: _gate_from(scope, item), _gate_item, rule
        )


def _pending_item(pending: Pending) -> dict[str, object]:
    return {
        "r": pending.run_id,
        "o": items.epoch_us(pending.opened_at),
        "d": items.epoch_us(pending.due),
        "i": [{"k": i.id, "v": i.data} for i in pending.items],
    }


def _pending_from(value: dict[str, object]) -> Pending:
    inputs = value.get("i", [])
    assert isinstance(inputs, list)
    return Pending(
        str(value["r"]),
        at_us(value["o"]),
        at_us(value["d"]),
        tuple(Input(str(i["k"]), bytes(i["v"])) for i in inputs),
    )


def _gate_item(gate: Gate) -> dict[str, object]:
    item: dict[str, object] = {
        "closed": [_pending_item(p) for p in gate.closed],
        "recent": [[i, r] for i, r in gate.recent],
        "live": gate.live,
    }
    if gate.open is not None:
        item["open"] = _pending_item(gate.open)
    if gate.live_since is not None:
        item["live_since"] = items.epoch_us(gate.live_since)
    return item


def _gate_from(scope: str, item: Item | None) -> Gate:
    if item is None:
        return Gate(scope)
    since = item.get("live_since")
    return Gate(
        scope,
        open=_pending_from(item["open"]) if "open" in item else None,
        closed=tuple(_pending_from(p) for p in item.get("closed", [])),
        recent=tuple((str(i), str(r)) for i, r in item.get("recent", [])),
        live=str(item.get("live", "")),
        live_since=at_us(since) if since is not None else None,
        version=int(item["version"]),
    )
