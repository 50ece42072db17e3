"""A dev state snapshot carries every kind of value through the file into a fresh stack, exactly.

Below the dev stack: one embedded moto, two provisioned copies of the template's resources
(``a`` filled by the test, ``b`` fresh). The snapshot of ``a`` is saved to disk, loaded and
restored into ``b``; what ``b`` answers through the AWS APIs is what was written into ``a``:
items with binaries at the top and nested in maps and lists, sets, numbers; objects; a
message with string and binary attributes, and a delayed one that stays delayed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import fake_aws_environment
from world_aws.local.dev_state import StateDir, restore
from world_aws.local.embedded import EmbeddedAws
from world_aws.local.moto_state import read_state

ITEM: dict[str, Any] = {
    "pk": {"S": "run#wrun_1"},
    "sk": {"S": "event#0000000001"},
    "payload": {"B": b"\x00\xffcbor"},
    "nested": {
        "M": {"blob": {"B": b"\x01\x02"}, "list": {"L": [{"B": b"\x03"}, {"N": "7"}, {"NULL": True}]}}
    },
    "tags": {"SS": ["a", "b"]},
    "blobs": {"BS": [b"\x04", b"\x05"]},
    "count": {"N": "42"},
    "done": {"BOOL": False},
}


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedAws]:
    fake_aws_environment(monkeypatch)
    with EmbeddedAws(name_prefix="t-state-a", apply_settings=False) as aws:
        yield aws


def test_a_snapshot_restores_items_objects_and_messages_exactly(
    embedded: EmbeddedAws, tmp_path: Path
) -> None:
    clients, a = embedded.clients, embedded.resources
    # GIVEN a stack holding every kind of value
    clients.dynamodb.put_item(TableName=a.table_name, Item=ITEM)
    clients.s3.put_object(Bucket=a.bucket_name, Key="payloads/wrun_1/1", Body=b"\x00big payload")
    attributes: dict[str, Any] = {
        "due": {"DataType": "Number", "StringValue": "1700000000000"},
        "trace": {"DataType": "Binary", "BinaryValue": b"\x09\x08"},
    }
    clients.sqs.send_message(QueueUrl=a.step_queue_url, MessageBody="now", MessageAttributes=attributes)
    clients.sqs.send_message(QueueUrl=a.workflow_queue_url, MessageBody="later", DelaySeconds=600)
    # WHEN its snapshot goes through the file into a fresh copy of the resources
    directory = StateDir.open(tmp_path / "state")
    try:
        directory.save(read_state(embedded.app, a, embedded.region))
        loaded = directory.load()
    finally:
        directory.close()
    assert loaded is not None
    b = embedded.provision("t-state-b")
    restore(clients, b, loaded)
    # THEN the item, the object and the messages are as they were written
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    got = clients.dynamodb.get_item(TableName=b.table_name, Key=key)["Item"]
    assert _sets_sorted(got) == _sets_sorted(ITEM)
    assert (
        clients.s3.get_object(Bucket=b.bucket_name, Key="payloads/wrun_1/1")["Body"].read()
        == b"\x00big payload"
    )
    received = clients.sqs.receive_message(
        QueueUrl=b.step_queue_url, MessageAttributeNames=["All"], WaitTimeSeconds=0
    )["Messages"]
    assert [m["Body"] for m in received] == ["now"]
    got_attributes = received[0]["MessageAttributes"]
    assert got_attributes["due"]["StringValue"] == "1700000000000"
    assert got_attributes["trace"]["BinaryValue"] == b"\x09\x08"
    counts = clients.sqs.get_queue_attributes(
        QueueUrl=b.workflow_queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    assert counts == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesDelayed": "1"}


def _sets_sorted(item: Any) -> Any:
    """Sets compare as sets (DynamoDB keeps no order in them)."""
    if isinstance(item, dict):
        return {k: sorted(v) if k in ("SS", "BS", "NS") else _sets_sorted(v) for k, v in item.items()}
    if isinstance(item, list):
        return [_sets_sorted(v) for v in item]
    return item
