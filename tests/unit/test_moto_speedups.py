"""``world_aws.local.moto_speedups``: moto answers as before, at the cost of the items involved."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table as MotoTable

from world_aws.local import moto_speedups

TABLE = "speedups"


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    assert moto_speedups.install()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "by_g",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        # Three partitions of 40 items; every fifth item is in the index.
        for part in ("a", "b", "c"):
            for i in range(40):
                item = {"pk": {"S": part}, "sk": {"S": f"k#{i:03d}"}, "n": {"N": str(i)}}
                if i % 5 == 0:
                    item["g"] = {"S": "indexed"}
                client.put_item(TableName=TABLE, Item=item)
        yield client


def _sks(response: dict[str, Any]) -> list[str]:
    return [item["sk"]["S"] for item in response["Items"]]


def test_install_is_idempotent_and_marks_moto() -> None:
    assert moto_speedups.install() and moto_speedups.install()
    assert getattr(MotoTable, "_world_aws_speedups", False) is True


def test_a_base_table_query_returns_its_partition_in_key_order(ddb: Any) -> None:
    # GIVEN three partitions WHEN partition "b" is queried forwards and backwards, with a key condition
    forward = ddb.query(
        TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "b"}}
    )
    backward = ddb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p AND begins_with(sk, :s)",
        ExpressionAttributeValues={":p": {"S": "b"}, ":s": {"S": "k#01"}},
        ScanIndexForward=False,
        ConsistentRead=True,
    )
    # THEN only its items come back, in sort-key order
    assert _sks(forward) == [f"k#{i:03d}" for i in range(40)]
    assert {item["pk"]["S"] for item in forward["Items"]} == {"b"}
    assert _sks(backward) == [f"k#{i:03d}" for i in range(19, 9, -1)]


def _every_page(ddb: Any, **kwargs: Any) -> list[str]:
    """The sort keys of a Query followed page by page to its end."""
    seen: list[str] = []
    while True:
        page = ddb.query(**kwargs)
        seen += _sks(page)
        if "LastEvaluatedKey" not in page:
            return seen
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_a_paginated_query_walks_its_partition_once(ddb: Any) -> None:
    seen = _every_page(
        ddb,
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "c"}},
        Limit=7,
    )
    assert seen == [f"k#{i:03d}" for i in range(40)]


KEYS = [f"k#{i:03d}" for i in range(40)]


@pytest.mark.parametrize(
    ("condition", "values", "expected"),
    [
        ("begins_with(sk, :a)", {":a": "k#02"}, [k for k in KEYS if k.startswith("k#02")]),
        (
            "sk BETWEEN :a AND :b",
            {":a": "k#005", ":b": "k#031"},
            [k for k in KEYS if "k#005" <= k <= "k#031"],
        ),
        ("sk > :a", {":a": "k#017"}, [k for k in KEYS if k > "k#017"]),
        ("sk >= :a", {":a": "k#017"}, [k for k in KEYS if k >= "k#017"]),
        ("sk < :a", {":a": "k#017"}, [k for k in KEYS if k < "k#017"]),
        ("sk <= :a", {":a": "k#017"}, [k for k in KEYS if k <= "k#017"]),
        ("sk = :a", {":a": "k#017"}, ["k#017"]),
    ],
    ids=["begins_with", "between", "gt", "ge", "lt", "le", "eq"],
)
@pytest.mark.parametrize("forward", [True, False], ids=["forward", "backward"])
def test_a_range_condition_pages_through_exactly_its_items_in_order(
    ddb: Any, condition: str, values: dict[str, str], expected: list[str], forward: bool
) -> None:
    # GIVEN partition "a" WHEN it is queried with a range condition, 4 items a page
    seen = _every_page(
        ddb,
        TableName=TABLE,
        KeyConditionExpression=f"pk = :p AND {condition}",
        ExpressionAttributeValues={":p": {"S": "a"}, **{k: {"S": v} for k, v in values.items()}},
        ScanIndexForward=forward,
        Limit=4,
    )
    # THEN exactly the matching items came back, each once, in key order
    assert seen == (expected if forward else expected[::-1])


def test_index_queries_and_unknown_partitions_are_unchanged(ddb: Any) -> None:
    indexed = ddb.query(
        TableName=TABLE,
        IndexName="by_g",
        KeyConditionExpression="g = :g",
        ExpressionAttributeValues={":g": {"S": "indexed"}},
    )
    assert len(indexed["Items"]) == 3 * 8
    empty = ddb.query(
        TableName=TABLE, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "z"}}
    )
    assert empty["Items"] == []


def test_a_cancelled_transaction_leaves_every_item_as_it_was(ddb: Any) -> None:
    # GIVEN a transaction that updates one item, creates another, then fails a condition
    before = ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "k#001"}})["Item"]
    with pytest.raises(ddb.exceptions.TransactionCanceledException):
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": {"pk": {"S": "a"}, "sk": {"S": "k#001"}},
                        "UpdateExpression": "SET n = :n",
                        "ExpressionAttributeValues": {":n": {"N": "999"}},
                    }
                },
                {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "a"}, "sk": {"S": "new"}}}},
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {"pk": {"S": "a"}, "sk": {"S": "k#002"}},
                        "ConditionExpression": "attribute_not_exists(sk)",
                    }
                },
            ]
        )
    # THEN nothing of it was applied
    assert ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "k#001"}})["Item"] == before
    assert "Item" not in ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "new"}})
    # AND a transaction that passes applies every action
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": "a"}, "sk": {"S": "new"}}}},
            {"Delete": {"TableName": TABLE, "Key": {"pk": {"S": "a"}, "sk": {"S": "k#003"}}}},
        ]
    )
    assert "Item" in ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "new"}})
    assert "Item" not in ddb.get_item(TableName=TABLE, Key={"pk": {"S": "a"}, "sk": {"S": "k#003"}})


def test_outside_a_query_all_items_is_still_the_whole_table(ddb: Any) -> None:
    # GIVEN a partition query running on another thread, paused inside moto's all_items()
    from moto.dynamodb.models import dynamodb_backends

    table = dynamodb_backends["123456789012"]["us-east-1"].get_table(TABLE)
    inside, release = threading.Event(), threading.Event()
    patched = MotoTable.all_items

    def paused(self: Any) -> Any:
        items = patched(self)
        if threading.current_thread().name == "querying":
            inside.set()
            release.wait(10)
        return items

    MotoTable.all_items = paused  # type: ignore[method-assign]
    try:
        query = threading.Thread(
            name="querying",
            target=lambda: ddb.query(
                TableName=TABLE,
                KeyConditionExpression="pk = :p",
                ExpressionAttributeValues={":p": {"S": "a"}},
            ),
        )
        query.start()
        assert inside.wait(10)
        # WHEN this thread asks for all items meanwhile THEN it sees every partition
        assert len(table.all_items()) == 3 * 40
        release.set()
        query.join(10)
    finally:
        MotoTable.all_items = patched  # type: ignore[method-assign]


def test_moto_request_helpers_are_remembered_with_the_same_answers() -> None:
    # GIVEN the speedups installed, and moto's own helpers as they were
    from moto.core import responses, utils
    from moto.sqs import models

    original = (
        utils.camelcase_to_underscores.__wrapped__
        if hasattr(utils.camelcase_to_underscores, "__wrapped__")
        else utils.camelcase_to_underscores
    )
    moto_speedups.install()
    # THEN the modules that imported them by name use the remembering ones
    for module in (utils, responses, models):
        assert hasattr(module.camelcase_to_underscores, "cache_info"), module.__name__
    assert hasattr(responses.method_names_from_class, "cache_info")
    # AND they answer as moto's do
    for name in ("ReceiveMessage", "TransactWriteItems", "theNewAttribute", "VisibilityTimeout", ""):
        assert utils.camelcase_to_underscores(name) == original(name)
    names = responses.method_names_from_class(responses.BaseResponse)
    assert "call_action" in names and names == responses.method_names_from_class.__wrapped__(
        responses.BaseResponse
    )


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    assert moto_speedups.install()
    with mock_aws():
        yield boto3.client("sqs", region_name="us-east-1")


def test_moto_sqs_reads_now_from_the_system_clock_with_moto_s_answer() -> None:
    # GIVEN the speedups installed
    from moto.core import utils
    from moto.sqs import models

    moto_speedups.install()
    # THEN the SQS module's "now" is the system clock's, as moto's own computes it
    before = time.time()
    fast_s, fast_ms, moto_s = models.unix_time(), models.unix_time_millis(), utils.unix_time()
    after = time.time()
    assert models.unix_time is not utils.unix_time
    assert before <= fast_s <= after and before * 1000 <= fast_ms <= after * 1000
    assert abs(moto_s - fast_s) < 1.0
    # AND a given datetime is converted as before
    moment = datetime(2026, 12, 2, 4, 30, 0, 250_000)
    assert models.unix_time(moment) == utils.unix_time(moment)
    assert models.unix_time_millis(moment) == utils.unix_time_millis(moment)


def test_visibility_delay_and_retention_hold_with_the_speedups(sqs: Any) -> None:
    # GIVEN a queue with a 60 s retention period, one message delayed and one visible
    url = sqs.create_queue(QueueName="speedups", Attributes={"MessageRetentionPeriod": "60"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="later", DelaySeconds=30)
    sqs.send_message(QueueUrl=url, MessageBody="now")
    # WHEN received THEN only the visible one comes, and then stays in flight
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30)["Messages"]
    assert [m["Body"] for m in first] == ["now"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    counters = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counters["ApproximateNumberOfMessagesDelayed"] == "1"
    assert counters["ApproximateNumberOfMessagesNotVisible"] == "1"
    # AND a message older than the retention period is not handed out
    sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=first[0]["ReceiptHandle"], VisibilityTimeout=0)
    from moto.sqs.models import sqs_backends

    queue = sqs_backends["123456789012"]["us-east-1"].get_queue("speedups")
    for message in queue._messages:
        message.sent_timestamp -= 61_000
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
