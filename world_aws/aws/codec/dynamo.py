"""A thin, typed layer over the DynamoDB client: items as plain Python values, failures as our kinds.

Everything above this module sees items as ``dict[str, object]`` with ``str``,
``int``, ``bytes``, ``bool``, ``dict``, ``list`` and ``None`` values (numbers are
always integers here: positions, counters, epoch microseconds). Two outcomes
are not errors but answers, and come back as exceptions private to the AWS
World so the caller can classify them with the contract's rules:

* :class:`ConditionFailed` — a conditional write refused, with the ``ALL_OLD``
  image of the item (``None`` when the item does not exist);
* :class:`Cancelled` — a transaction cancelled, with one :class:`CancelReason`
  per action (code and ``ALL_OLD`` image).

Every other botocore failure leaves as a world-aws error through
:func:`world_aws.aws.errors.translate`; no botocore exception crosses this layer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.aws.codec.keys import Key
from world_aws.aws.errors import error_code, translate
from world_aws.errors import Transient

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
Values = Mapping[str, object]
Names = Mapping[str, str]

CONDITION_FAILED = "ConditionalCheckFailed"
# BatchGetItem reads at most 100 keys per call (DynamoDB API reference).
# BatchWriteItem takes at most 25 requests (DynamoDB API reference).
BATCH_WRITE_MAX_ITEMS = 25
BATCH_GET_MAX_KEYS = 100
_UNPROCESSED_RETRIES = 8


class ConditionFailed(Exception):
    """A conditional write was refused; ``item`` is the item as it was (``None``: absent)."""

    def __init__(self, item: Item | None) -> None:
        super().__init__("conditional check failed")
        self.item = item


@dataclass(frozen=True, slots=True)
class CancelReason:
    """Why one action of a cancelled transaction failed (``code`` ``"None"``: it did not)."""

    code: str
    item: Item | None

    @property
    def condition_failed(self) -> bool:
        return self.code == CONDITION_FAILED


class Cancelled(Exception):
    """A transaction was cancelled; ``reasons[i]`` belongs to action ``i``, named ``names[i]``.

    Writers find a refusal by its action's name (``reason``, ``refused_by``; the names
    are ``aws.plans``'), never by its index: ``Table.transact`` sets ``names``.
    """

    def __init__(self, reasons: list[CancelReason], names: Sequence[str] = ()) -> None:
        super().__init__("transaction cancelled: " + ", ".join(r.code for r in reasons))
        self.reasons = reasons
        self.names = list(names)

    def reason(self, name: str) -> CancelReason | None:
        """The reason of the action named ``name`` (the first so named), or None if there is none."""
        for index, action_name in enumerate(self.names):
            if action_name == name:
                return self.reasons[index] if index < len(self.reasons) else None
        return None

    def refused_by(self, name: str) -> bool:
        """True when the action named ``name`` failed its condition."""
        reason = self.reason(name)
        return reason is not None and reason.condition_failed

    def item_of(self, name: str) -> Item | None:
        """The ``ALL_OLD`` image that the action named ``name`` returned (None: no item, or none given)."""
        reason = self.reason(name)
        return None if reason is None else reason.item

    def only_conditions(self) -> bool:
        """True when every failing action failed its condition (nothing transient)."""
        return all(r.code in ("None", CONDITION_FAILED) for r in self.reasons)


# ----------------------------------------------------------------------------- value codec


def to_attr(value: object) -> dict[str, Any]:
    """One Python value as a DynamoDB attribute value."""
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"B": bytes(value)}
    if isinstance(value, Mapping):
        return {"M": {str(k): to_attr(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"L": [to_attr(v) for v in value]}
    raise TypeError(f"cannot store a {type(value).__name__} in DynamoDB here")


def from_attr(attr: Mapping[str, Any]) -> Any:
    """One DynamoDB attribute value as a Python value."""
    (kind, raw), *_ = attr.items()
    if kind == "S":
        return raw
    if kind == "N":
        return int(raw)
    if kind == "B":
        return bytes(raw)
    if kind == "BOOL":
        return bool(raw)
    if kind == "M":
        return {k: from_attr(v) for k, v in raw.items()}
    if kind == "L":
        return [from_attr(v) for v in raw]
    if kind == "NULL":
        return None
    raise TypeError(f"unexpected DynamoDB attribute type {kind}")


def to_item(item: Mapping[str, object]) -> dict[str, Any]:
    return {k: to_attr(v) for k, v in item.items() if v is not None}


def from_item(raw: Mapping[str, Any] | None) -> Item | None:
    return None if raw is None else {k: from_attr(v) for k, v in raw.items()}


# ----------------------------------------------------------------------------- transaction actions


def _expression(
    condition: str | None, names: Names | None, values: Values | None, *, update: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if update is not None:
        out["UpdateExpression"] = update
    if condition is not None:
        out["ConditionExpression"] = condition
    if names:
        out["ExpressionAttributeNames"] = dict(names)
    if values:
        out["ExpressionAttributeValues"] = {k: to_attr(v) for k, v in values.items()}
    return out


@dataclass(frozen=True, slots=True)
class Action:
    """One action of a ``TransactWriteItems`` call, built by the methods of :class:`Table`.

    ``name`` says what the action is for (``aws.plans``' action names), so a cancellation
    is read by name.
    """

    request: dict[str, Any]
    name: str = ""


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Item]
    last_key: Item | None


class Table:
    """The world's table, through one injected boto3 DynamoDB client. Thread-safe (boto3 clients are)."""

    def __init__(self, client: DynamoDBClient, name: str) -> None:
        self.client = client
        self.name = name

    # -- reads -----------------------------------------------------------------------------

    def get(self, key: Key, *, attributes: Sequence[str] | None = None) -> Item | None:
        """The item under ``key`` (strongly consistent), or ``None``."""
        kwargs: dict[str, Any] = {"TableName": self.name, "Key": to_item(key), "ConsistentRead": True}
        if attributes:
            kwargs.update(_projection(attributes))
        response = self._call("GetItem", self.client.get_item, kwargs)
        return from_item(response.get("Item"))

    def batch_get(self, keys: Sequence[Key], *, consistent: bool = True) -> list[Item]:
        """The items that exist among ``keys`` (strongly consistent unless told), in no particular order."""
        found: list[Item] = []
        for start in range(0, len(keys), BATCH_GET_MAX_KEYS):
            pending: dict[str, Any] = {
                self.name: {
                    "Keys": [to_item(k) for k in keys[start : start + BATCH_GET_MAX_KEYS]],
                    "ConsistentRead": consistent,
                }
            }
            for attempt in range(_UNPROCESSED_RETRIES):
                response = self._call("BatchGetItem", self.client.batch_get_item, {"RequestItems": pending})
                found.extend(
                    from_attr({"M": raw}) for raw in response.get("Responses", {}).get(self.name, [])
                )
                pending = dict(response.get("UnprocessedKeys") or {})
                if not pending:
                    break
                # Unprocessed keys mean throttling: back off before asking again.
                time.sleep(0.01 * 2**attempt)
            else:
                raise Transient("BatchGetItem left keys unprocessed after retries", retry_after=1.0)
        return found

    def query_page(
        self,
        key_condition: str,
        values: Values,
        *,
        names: Names | None = None,
        index: str | None = None,
        forward: bool = True,
        limit: int | None = None,
        start_key: Item | None = None,
        filter_expression: str | None = None,
    ) -> Page:
        """One page (at most 1 MB, DynamoDB's cut-off) of a Query."""
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": forward,
            **_expression(filter_expression, names, values),
        }
        if filter_expression is not None:
            kwargs["FilterExpression"] = kwargs.pop("ConditionExpression")
        if index is None:
            kwargs["ConsistentRead"] = True  # a GSI cannot be read consistently
        else:
            kwargs["IndexName"] = index
        if limit is not None:
            kwargs["Limit"] = limit
        if start_key is not None:
            kwargs["ExclusiveStartKey"] = to_item(start_key)
        response = self._call("Query", self.client.query, kwargs)
        items = [from_attr({"M": raw}) for raw in response.get("Items", [])]
        return Page(items=items, last_key=from_item(response.get("LastEvaluatedKey")))

    def query_all(self, key_condition: str, values: Values, *, names: Names | None = None) -> Iterator[Item]:
        """Every item of a Query on the table, following ``LastEvaluatedKey`` page by page."""
        start: Item | None = None
        while True:
            page = self.query_page(key_condition, values, names=names, start_key=start)
            yield from page.items
            if page.last_key is None:
                return
            start = page.last_key

    # -- single-item writes ----------------------------------------------------------------

    def put(
        self,
        item: Mapping[str, object],
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
    ) -> None:
        """Put ``item``. Raises ConditionFailed with the existing item."""
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "Item": to_item(item),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **_expression(condition, names, values),
        }
        self._call("PutItem", self.client.put_item, kwargs)

    def update(
        self,
        key: Key,
        update: str,
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
        return_values: str = "ALL_NEW",
    ) -> Item:
        """Update the item under ``key``; returns it as ``return_values`` says.

        Raises:
            ConditionFailed: with the ``ALL_OLD`` image (``None`` if the item is absent).
        """
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "Key": to_item(key),
            "ReturnValues": return_values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **_expression(condition, names, values, update=update),
        }
        response = self._call("UpdateItem", self.client.update_item, kwargs)
        return from_item(response.get("Attributes")) or {}

    def delete(
        self,
        key: Key,
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
    ) -> None:
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "Key": to_item(key),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            **_expression(condition, names, values),
        }
        self._call("DeleteItem", self.client.delete_item, kwargs)

    def batch_write(self, puts: Sequence[Mapping[str, object]] = (), deletes: Sequence[Key] = ()) -> None:
        """Unconditional puts and deletes, 25 to a ``BatchWriteItem``, retrying unprocessed ones.

        Raises:
            Transient: items were still unprocessed (throttled) after the retries.
        """
        requests = [{"PutRequest": {"Item": to_item(item)}} for item in puts]
        requests += [{"DeleteRequest": {"Key": to_item(key)}} for key in deletes]
        for start in range(0, len(requests), BATCH_WRITE_MAX_ITEMS):
            pending: dict[str, Any] = {self.name: requests[start : start + BATCH_WRITE_MAX_ITEMS]}
            for attempt in range(_UNPROCESSED_RETRIES):
                response = self._call(
                    "BatchWriteItem", self.client.batch_write_item, {"RequestItems": pending}
                )
                pending = dict(response.get("UnprocessedItems") or {})
                if not pending:
                    break
                time.sleep(0.01 * 2**attempt)  # unprocessed items mean throttling: back off
            else:
                raise Transient("BatchWriteItem left items unprocessed after retries", retry_after=1.0)

    # -- transactions ------------------------------------------------------------------------

    def put_action(
        self,
        item: Mapping[str, object],
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
        name: str = "",
    ) -> Action:
        body = {"TableName": self.name, "Item": to_item(item), **_expression(condition, names, values)}
        return Action({"Put": {**body, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}, name)

    def update_action(
        self,
        key: Key,
        update: str,
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
        name: str = "",
    ) -> Action:
        body = {
            "TableName": self.name,
            "Key": to_item(key),
            **_expression(condition, names, values, update=update),
        }
        return Action({"Update": {**body, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}, name)

    def delete_action(
        self,
        key: Key,
        *,
        condition: str | None = None,
        names: Names | None = None,
        values: Values | None = None,
        name: str = "",
    ) -> Action:
        body = {"TableName": self.name, "Key": to_item(key), **_expression(condition, names, values)}
        return Action({"Delete": {**body, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}, name)

    def check_action(
        self,
        key: Key,
        condition: str,
        *,
        names: Names | None = None,
        values: Values | None = None,
        name: str = "",
    ) -> Action:
        body = {"TableName": self.name, "Key": to_item(key), **_expression(condition, names, values)}
        return Action({"ConditionCheck": {**body, "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}, name)

    def transact(self, actions: Sequence[Action]) -> None:
        """Apply every action or none (at most 100 actions and 4 MB, DynamoDB's limits).

        Raises:
            Cancelled: with one reason per action, and the actions' names.
        """
        kwargs = {"TransactItems": [a.request for a in actions]}
        try:
            self._call("TransactWriteItems", self.client.transact_write_items, kwargs)
        except Cancelled as cancelled:
            cancelled.names = [a.name for a in actions]
            raise

    def apply(self, action: Action) -> Item:
        """Apply one ``update_action`` alone, as a plain write; returns the item after it (``ALL_NEW``).

        Raises:
            ConditionFailed: with the ``ALL_OLD`` image (``None`` if the item is absent).
        """
        ((kind, body),) = action.request.items()
        if kind != "Update":
            raise ValueError(f"only an Update action runs alone, not {kind}")
        response = self._call("UpdateItem", self.client.update_item, {**body, "ReturnValues": "ALL_NEW"})
        return from_item(response.get("Attributes")) or {}

    # -- plumbing ----------------------------------------------------------------------------

    def _call(self, operation: str, method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            response: dict[str, Any] = method(**kwargs)
        except ClientError as exc:
            code = error_code(exc)
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed(from_item(exc.response.get("Item"))) from None  # type: ignore[arg-type]
            if code == "TransactionCanceledException":
                raw_reasons: list[dict[str, Any]] = exc.response.get("CancellationReasons", [])  # type: ignore[assignment]
                reasons = [
                    CancelReason(code=str(r.get("Code", "None")), item=from_item(r.get("Item")))
                    for r in raw_reasons
                ]
                raise Cancelled(reasons) from None
            raise translate(exc, operation=f"DynamoDB {operation}", resource=self._resource(kwargs)) from exc
        except BotoCoreError as exc:
            raise translate(exc, operation=f"DynamoDB {operation}", resource=self._resource(kwargs)) from exc
        return response

    def _resource(self, kwargs: dict[str, Any]) -> str:
        index = kwargs.get("IndexName")
        return f"table {self.name}" + (f" index {index}" if index else "")


def _projection(attributes: Sequence[str]) -> dict[str, Any]:
    names = {f"#p{i}": name for i, name in enumerate(attributes)}
    return {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}
