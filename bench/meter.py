"""``BillingMeter``: every request of a World's clients billed by its service's rules, per World op.

botocore hooks next to the ``CallRecorder``'s (which owns op attribution, muting and the call
lock): ``provide-client-params`` keeps the call's parameters and World op; ``before-call``
(under the call lock) reads the *before* image of every item a write names through a shadow
client the hooks do not see; ``after-call`` reads the *after* images and bills the request
(``bench.billing``: writes by the larger image, x2 in a transaction, GSI upkeep; reads by the
full items read; SQS by 64 KB chunks; S3 by request class; a write refused by its condition on
the item it found). It tells the ``InvocationMeter`` when a call starts and ends.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import boto3

from bench import billing
from bench.billing import SecondaryIndex
from bench.instrument import CallRecorder
from bench.invocations import InvocationMeter
from bench.usage import ItemWrites, T, Usage
from world_aws.aws.clients import AwsClients

_KEY = "bench.meter"
_BILLED_ERRORS = ("ConditionalCheckFailedException", "TransactionCanceledException")
_WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
# S3 request classes (https://aws.amazon.com/s3/pricing/): DELETE is free, these PUT-class, the rest GET.
_S3_PUT_CLASS = ("PutObject", "CopyObject", "PostObject", "CreateMultipartUpload", "UploadPart")
_S3_FREE = ("DeleteObject", "DeleteObjects", "AbortMultipartUpload")
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


class BillingMeter:
    """Bills every request of the clients it is attached to, per World op.

    Args:
        recorder: the recorder attached to the same clients (op attribution, muting, the call lock).
        invocations: told of each call's start and end (Lambda duration model).
    """

    def __init__(self, recorder: CallRecorder, invocations: InvocationMeter) -> None:
        self._recorder = recorder
        self._invocations = invocations
        self._lock = threading.Lock()
        self._bill: dict[str, Usage] = {}
        self._items: dict[str, ItemWrites] = {}
        self._tables: dict[str, tuple[tuple[str, ...], tuple[SecondaryIndex, ...]]] = {}
        self._shadow: Any = None

    def attach(self, clients: AwsClients) -> None:
        """Hook the World's clients (after ``recorder.attach``)."""
        dynamodb = clients.dynamodb
        session = boto3.session.Session(region_name=dynamodb.meta.region_name)
        self._shadow = session.client("dynamodb", endpoint_url=dynamodb.meta.endpoint_url)
        for client in (clients.dynamodb, clients.sqs, clients.s3, clients.kms):
            if client is None:
                continue
            events = client.meta.events
            events.register("provide-client-params.*.*", self._on_params)
            events.register_last("before-call.*.*", self._on_before)
            events.register_first("after-call.*.*", self._on_after)

    def snapshot(self) -> dict[str, Usage]:
        """The bill so far, per op key."""
        with self._lock:
            return {key: _copy(usage, Usage()) for key, usage in self._bill.items()}

    def item_writes(self) -> dict[str, ItemWrites]:
        """DynamoDB writes so far, per kind of item (``_item_kind``)."""
        with self._lock:
            return {key: _copy(writes, ItemWrites()) for key, writes in self._items.items()}

    # ---------------------------------------------------------------- botocore handlers

    def _on_params(
        self, params: Mapping[str, Any], context: dict[str, Any], event_name: str, **_: Any
    ) -> None:
        if not self._recorder.is_muted():
            context[_KEY] = {"params": dict(params), "op": self._recorder.current_op()}
        return None

    def _on_before(self, context: dict[str, Any], event_name: str, **_: Any) -> None:
        state = context.get(_KEY)
        if state is None:
            return None
        self._invocations.call_started(context)
        service, operation = _split(event_name)
        if service == "dynamodb" and operation in _WRITES:
            targets = []
            for kind, table, named in _targets(operation, state["params"]):
                key = self._key_of(table, named)
                targets.append((kind, table, key, self._image(table, key)))
            state["targets"] = targets
        return None

    def _on_after(
        self, parsed: Mapping[str, Any], context: dict[str, Any], event_name: str, **_: Any
    ) -> None:
        state = context.get(_KEY)
        if state is None:
            return
        service, operation = _split(event_name)
        usage = Usage(calls=1)
        error = str(parsed.get("Error", {}).get("Code", ""))
        if service == "dynamodb" and (not error or error in _BILLED_ERRORS):
            self._bill_dynamodb(operation, state, parsed, usage)
        elif service == "sqs":
            _bill_sqs(operation, state["params"], parsed, usage)
        elif service == "kms":
            usage.kms_requests += 1
        elif service == "s3":
            if operation in _S3_PUT_CLASS or operation.startswith(("List", "CompleteMultipart")):
                usage.s3_put += 1
            elif operation not in _S3_FREE:
                usage.s3_get += 1
        with self._lock:
            self._bill.setdefault(state["op"], Usage()).add(usage)
        self._invocations.call_ended(context, service)

    # ---------------------------------------------------------------- DynamoDB

    def _bill_dynamodb(
        self, operation: str, state: dict[str, Any], parsed: Mapping[str, Any], usage: Usage
    ) -> None:
        params = state["params"]
        if operation in _WRITES:
            for kind, table, key, before in state["targets"]:
                after = self._image(table, key)
                transactional = operation == "TransactWriteItems"
                if kind == "ConditionCheck":
                    usage.rru += billing.read_units(billing.item_size(before), transactional=True)
                    continue
                size = max(billing.item_size(before), billing.item_size(after))
                units = billing.write_units(size, 0, transactional=transactional)
                usage.wru += units
                with self._lock:
                    tally = self._items.setdefault(_item_kind(key), ItemWrites())
                    tally.add(ItemWrites(1, int(transactional), units, size))
                table_keys, indexes = self._schema(table)
                for index in indexes:
                    usage.gsi_wru += billing.index_write_units(before, after, index, table_keys)
        elif operation == "GetItem":
            item = self._image(params["TableName"], params["Key"])
            usage.rru += billing.read_units(
                billing.item_size(item), consistent=bool(params.get("ConsistentRead"))
            )
        elif operation == "BatchGetItem":
            for table, request in params["RequestItems"].items():
                for key in request["Keys"]:
                    size = billing.item_size(self._image(table, key))
                    usage.rru += billing.read_units(size, consistent=bool(request.get("ConsistentRead")))
        elif operation in ("Query", "Scan"):
            items = self._full_page(operation, params)
            consistent = bool(params.get("ConsistentRead")) and "IndexName" not in params
            usage.rru += billing.read_units(sum(billing.item_size(i) for i in items), consistent=consistent)

    def _image(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        response = self._shadow.get_item(TableName=table, Key=dict(key), ConsistentRead=True)
        item: dict[str, Any] | None = response.get("Item")
        return item

    def _full_page(self, operation: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The items a Query or Scan page read: the same page without its filter and projection."""
        request = {
            k: v for k, v in params.items() if k not in ("FilterExpression", "ProjectionExpression", "Select")
        }
        used = set(_PLACEHOLDER.findall(str(request.get("KeyConditionExpression", ""))))
        for name in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
            kept = {k: v for k, v in dict(request.pop(name, {})).items() if k in used}
            if kept:
                request[name] = kept
        method = self._shadow.query if operation == "Query" else self._shadow.scan
        items: list[dict[str, Any]] = method(**request).get("Items", [])
        return items

    def _schema(self, table: str) -> tuple[tuple[str, ...], tuple[SecondaryIndex, ...]]:
        """The table's key attributes and its GSIs (described once through the shadow client)."""
        if table not in self._tables:
            described = self._shadow.describe_table(TableName=table)["Table"]
            indexes = tuple(
                SecondaryIndex(
                    name=gsi["IndexName"],
                    keys=tuple(k["AttributeName"] for k in gsi["KeySchema"]),
                    projected=None
                    if gsi["Projection"]["ProjectionType"] == "ALL"
                    else tuple(gsi["Projection"].get("NonKeyAttributes", [])),
                )
                for gsi in described.get("GlobalSecondaryIndexes", [])
            )
            self._tables[table] = (tuple(k["AttributeName"] for k in described["KeySchema"]), indexes)
        return self._tables[table]

    def _key_of(self, table: str, item: Mapping[str, Any]) -> dict[str, Any]:
        return {name: item[name] for name in self._schema(table)[0]}


def _copy(tally: T, into: T) -> T:
    into.add(tally)
    return into


def _item_kind(key: Mapping[str, Any]) -> str:
    """What an item is, from its key: its sort key up to the first ``#`` (``run``, ``evt``, ``dedup``...)."""
    values = [str(next(iter(v.values()))) for v in key.values()]
    return values[-1].split("#", 1)[0] if values else "?"


def _split(event_name: str) -> tuple[str, str]:
    _, service, operation = event_name.split(".", 2)
    return service, operation


def _targets(operation: str, params: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(action kind, table, key or item) of every item a write names."""
    if operation == "TransactWriteItems":
        out = []
        for action in params["TransactItems"]:
            ((kind, body),) = action.items()
            out.append((kind, body["TableName"], dict(body.get("Key") or body["Item"])))
        return out
    if operation == "BatchWriteItem":
        return [
            (
                "Put" if "PutRequest" in r else "Delete",
                table,
                dict(r.get("PutRequest", {}).get("Item") or r["DeleteRequest"]["Key"]),
            )
            for table, requests in params["RequestItems"].items()
            for r in requests
        ]
    return [(operation, params["TableName"], dict(params.get("Key") or params["Item"]))]


def _bill_sqs(operation: str, params: Mapping[str, Any], parsed: Mapping[str, Any], usage: Usage) -> None:
    if operation == "SendMessage":
        size = billing.message_size(params["MessageBody"], params.get("MessageAttributes"))
        usage.sqs_requests += billing.sqs_requests(size)
    elif operation == "SendMessageBatch":
        size = sum(
            billing.message_size(e["MessageBody"], e.get("MessageAttributes")) for e in params["Entries"]
        )
        usage.sqs_requests += billing.sqs_requests(size)
    elif operation == "ReceiveMessage":
        messages = parsed.get("Messages", [])
        if not messages:
            usage.sqs_empty_receives += 1
            return
        size = sum(billing.message_size(m.get("Body", ""), m.get("MessageAttributes")) for m in messages)
        usage.sqs_requests += billing.sqs_requests(size)
    else:
        usage.sqs_requests += 1
