"""Read the embedded stack's state out of moto: the table's items, the bucket's objects, the queues' messages.

moto keeps everything in process memory and has no persistence of its own. ``read_state``
copies what one provisioned stack holds into plain data (:class:`MotoState`), reading
moto's backend objects directly while it holds the serving lock (``SerializedApp.lock``):
no request runs meanwhile, so the copy is of one instant (a run's event and the run item
a transaction wrote together are both in it, or neither). Reading through the AWS APIs
instead could not be atomic: a Scan is paged, and the server serves other clients
between pages. ``world_aws.local.dev_state`` writes the copy to disk and puts it back into
a fresh stack through the AWS APIs.

moto's internals read here (moto 5.x, ``moto_range``): a table's ``items`` and
``range_key_attr``, an item's ``attrs`` (``DynamoType``: ``type``, ``value``), a bucket's
``keys`` (the newest version of each), a queue's ``_messages``.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from moto.core.models import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.s3.models import s3_backends
from moto.sqs.models import sqs_backends

from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.local.serial_wsgi import SerializedApp


@dataclass(frozen=True)
class QueuedMessage:
    """A queue message: body, attributes (SQS wire form, binaries base64), seconds left of its delay."""

    body: str
    attributes: dict[str, Any]
    delay_seconds: int


@dataclass(frozen=True)
class MotoState:
    """What one provisioned stack holds, by role (the same roles in a fresh stack with other names).

    Attributes:
        items: the table's items, in DynamoDB JSON (``{"pk": {"S": ...}}``; binaries base64).
        objects: the bucket's objects by key.
        messages: each queue's messages by role (``workflow``, ``step``, ``workflow_dlq``, ``step_dlq``).
    """

    items: list[dict[str, Any]] = field(default_factory=list)
    objects: dict[str, bytes] = field(default_factory=dict)
    messages: dict[str, list[QueuedMessage]] = field(default_factory=dict)


def queue_urls(resources: ProvisionedResources) -> dict[str, str]:
    """The queues of a stack by role."""
    return {
        "workflow": resources.workflow_queue_url,
        "step": resources.step_queue_url,
        "workflow_dlq": resources.workflow_dlq_url,
        "step_dlq": resources.step_dlq_url,
    }


def read_state(app: SerializedApp, resources: ProvisionedResources, region: str) -> MotoState:
    """Copy the stack's table, bucket and queues out of moto, with no request running meanwhile."""
    with app.lock:
        table = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(resources.table_name)
        items = [{name: _wire(value) for name, value in item.attrs.items()} for item in _items(table)]
        bucket = s3_backends[DEFAULT_ACCOUNT_ID]["global"].get_bucket(resources.bucket_name)
        objects = {name: key.value for name, key in bucket.keys.items() if key is not None}
        sqs = sqs_backends[DEFAULT_ACCOUNT_ID][region]
        now_ms = time.time() * 1000  # moto's delays are in epoch milliseconds
        messages = {
            role: [_message(message, now_ms) for message in sqs.queues[url.rsplit("/", 1)[-1]]._messages]
            for role, url in queue_urls(resources).items()
        }
    return MotoState(items=items, objects=objects, messages=messages)


def _items(table: Any) -> Iterator[Any]:
    """Every item of a moto table, unsorted (``all_items()`` sorts them all: most of a snapshot's time)."""
    for stored in table.items.values():
        if table.range_key_attr:
            yield from stored.values()
        else:
            yield stored


def _wire(value: Any) -> dict[str, Any]:
    """A moto ``DynamoType`` as DynamoDB JSON, in new containers, binaries as base64 text.

    ``Item.to_json()`` would do it through a deep copy of every value, several times slower,
    and with nested binaries left as bytes.
    """
    kind, inner = value.type, value.value
    if kind == "M":
        return {"M": {name: _wire(member) for name, member in inner.items()}}
    if kind == "L":
        return {"L": [_wire(member) for member in inner]}
    if kind == "B":
        return {"B": _base64(inner)}
    if kind == "BS":
        return {"BS": [_base64(member) for member in inner]}
    if isinstance(inner, list):  # SS, NS
        return {kind: list(inner)}
    return {kind: inner}


def _base64(binary: bytes | str) -> str:
    # moto holds a binary as the request's base64 text, or as bytes once decoded.
    return base64.b64encode(binary).decode("ascii") if isinstance(binary, bytes) else binary


def _attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as on the wire (``DataType``, ``StringValue``/``BinaryValue`` in base64)."""
    copied = {key: member for key, member in value.items() if key in ("DataType", "StringValue")}
    if value.get("BinaryValue") is not None:
        copied["BinaryValue"] = _base64(value["BinaryValue"])
    return copied


def _message(message: Any, now_ms: float) -> QueuedMessage:
    # A message in flight (received, not yet deleted) is taken as visible again: the consumer
    # that held it stops with the stack, as its visibility timeout would have run out.
    delayed_until = float(getattr(message, "delayed_until", 0.0) or 0.0)
    return QueuedMessage(
        body=str(message.body),
        attributes={name: _attribute(value) for name, value in (message.message_attributes or {}).items()},
        delay_seconds=max(0, min(900, int((delayed_until - now_ms) / 1000 + 0.999))),
    )
