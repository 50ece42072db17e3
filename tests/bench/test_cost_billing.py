"""Issue 12: the cost meter bills each request on moto as DynamoDB, SQS and S3 bill it.

Requests are made through a World's own clients with ``bench.meter.BillingMeter``
attached, each inside a named op; the bill of that op is compared with units the
test derives from the sizes it builds (names and values counted by hand).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from bench.billing import item_size, number_size, read_units, sqs_requests, write_units
from bench.core import MotoWorlds
from bench.instrument import CallRecorder, Latency
from bench.invocations import InvocationMeter
from bench.meter import BillingMeter
from bench.usage import Usage
from world_aws.aws.world import AwsWorld

KB = 1024
PK, SK, BLOB = "run#bill", "item#1", "blob"
# Bytes of the key attributes (name + value) and of the blob's name.
KEY_BYTES = len("pk") + len(PK) + len("sk") + len(SK)


def test_item_size_follows_the_documented_rules_for_every_type() -> None:
    # GIVEN one attribute of each kind, sized by hand from the documented rules
    item: dict[str, dict[str, Any]] = {
        "s": {"S": "héllo"},  # 1 + 6 UTF-8 bytes
        "n": {"N": "-012.3400"},  # 1 + (4 significant digits / 2 = 2) + 1
        "b": {"B": b"\x00" * 10},  # 1 + 10 raw bytes
        "t": {"BOOL": True},  # 1 + 1
        "l": {"L": [{"S": "ab"}, {"NULL": True}]},  # 1 + 3 + (1 + 2) + (1 + 1)
        "m": {"M": {"k": {"S": "v"}}},  # 1 + 3 + (1 + 1 + 1)
        "ss": {"SS": ["a", "bc"]},  # 2 + 3
    }
    hand = (1 + 6) + (1 + 2 + 1) + (1 + 10) + (1 + 1) + (1 + 3 + 3 + 2) + (1 + 3 + 3) + (2 + 3)
    # THEN the meter's size is the hand count
    assert item_size(item) == hand
    assert number_size("100") == number_size("1") == 2  # trailing zeros trimmed


def test_units_round_up_per_request_and_never_fall_below_the_minimum() -> None:
    # GIVEN sizes on both sides of the unit boundaries
    # THEN writes start a WRU per KB (1 at least), reads an RRU per 4 KB, SQS a request per 64 KB
    assert (write_units(0, 0), write_units(KB, 0), write_units(KB + 1, 10)) == (1, 1, 2)
    assert write_units(10, 3 * KB, transactional=True) == 2 * 3
    assert (read_units(0), read_units(4 * KB + 1), read_units(4 * KB + 1, consistent=False)) == (1, 2, 1)
    assert read_units(KB, transactional=True) == 2
    assert (sqs_requests(0), sqs_requests(64 * KB), sqs_requests(64 * KB + 1)) == (1, 1, 2)


class Billed:
    """A fresh World on moto with a meter; ``bill(op, call)`` runs ``call`` as ``op``, returns its units."""

    def __init__(self, moto: MotoWorlds, world: AwsWorld, meter: BillingMeter) -> None:
        self.moto, self.world, self.meter = moto, world, meter
        self.ddb: Any = world.clients.dynamodb
        self.sqs: Any = world.clients.sqs
        self.table = world.config.table_name

    def bill(self, op: str, call: Any) -> Usage:
        before = self.meter.snapshot().get(op, Usage())
        with self.moto.recorder.op(op):
            call()
        after = self.meter.snapshot()[op]
        return Usage(**{k: v - getattr(before, k) for k, v in after.to_json().items()})

    def item(self, total_bytes: int, **extra: dict[str, str]) -> dict[str, Any]:
        """An item of exactly ``total_bytes`` by DynamoDB's rules (``extra`` attributes included)."""
        extra_bytes = sum(len(name) + len(value["S"]) for name, value in extra.items())
        blob = total_bytes - KEY_BYTES - len(BLOB) - extra_bytes
        return {"pk": {"S": PK}, "sk": {"S": SK}, BLOB: {"B": b"x" * blob}, **extra}


@pytest.fixture(scope="module")
def billed() -> Iterator[Billed]:
    recorder = CallRecorder(Latency(0.0, 0.0, 0.0))
    with MotoWorlds(recorder) as moto, moto.fresh_world() as world:
        meter = BillingMeter(recorder, InvocationMeter(lambda _: 0.0))
        meter.attach(moto.clients)
        yield Billed(moto, world, meter)


def test_a_3_kb_put_is_3_wru_and_6_inside_a_transaction(billed: Billed) -> None:
    # GIVEN an item of 3 KB less a few bytes (so it starts its third KB)
    item = billed.item(3 * KB - 10)
    assert item_size(item) == 3 * KB - 10
    expected = math.ceil((3 * KB - 10) / KB)
    # WHEN it is put, then put again in a transaction (over an item of the same size)
    put = billed.bill("t.put", lambda: billed.ddb.put_item(TableName=billed.table, Item=item))
    txn = billed.bill(
        "t.txn",
        lambda: billed.ddb.transact_write_items(
            TransactItems=[{"Put": {"TableName": billed.table, "Item": item}}]
        ),
    )
    # THEN the put is billed 1 WRU per started KB, the transaction twice that
    assert put.wru == expected == 3
    assert txn.wru == 2 * expected
    assert put.gsi_wru == txn.gsi_wru == 0  # no gsi1 keys: not in the index


def test_an_update_shrinking_a_5_kb_item_to_half_a_kb_is_billed_on_the_larger_image(billed: Billed) -> None:
    # GIVEN a 5 KB item
    billed.ddb.put_item(TableName=billed.table, Item=billed.item(5 * KB))
    small = 512 - KEY_BYTES - len(BLOB)
    # WHEN an update leaves it at half a KB
    update = billed.bill(
        "t.shrink",
        lambda: billed.ddb.update_item(
            TableName=billed.table,
            Key={"pk": {"S": PK}, "sk": {"S": SK}},
            UpdateExpression="SET #b = :b",
            ExpressionAttributeNames={"#b": BLOB},
            ExpressionAttributeValues={":b": {"B": b"x" * small}},
        ),
    )
    # THEN it costs what the 5 KB before image costs
    assert update.wru == math.ceil(5 * KB / KB) == 5


def test_a_refused_conditional_put_is_billed_on_the_item_it_found(billed: Billed) -> None:
    # GIVEN an existing 2.5 KB item
    billed.ddb.put_item(TableName=billed.table, Item=billed.item(2 * KB + 512))

    def refused() -> None:
        with pytest.raises(billed.ddb.exceptions.ConditionalCheckFailedException):
            billed.ddb.put_item(
                TableName=billed.table, Item=billed.item(100), ConditionExpression="attribute_not_exists(pk)"
            )

    # WHEN a 100-byte put conditioned on its absence is refused
    usage = billed.bill("t.refused", refused)
    # THEN it is billed on the 2.5 KB item it found
    assert usage.wru == math.ceil((2 * KB + 512) / KB)


def test_index_upkeep_is_billed_when_a_projected_attribute_or_an_index_key_changes(billed: Billed) -> None:
    # GIVEN a run-like item in the runs index (keys gsi1pk, gsi1sk; workflow_name projected, seq not)
    key = {"pk": {"S": "run#gsi"}, "sk": {"S": "run"}}
    item = {
        **key,
        "gsi1pk": {"S": "runs"},
        "gsi1sk": {"S": "t1"},
        "workflow_name": {"S": "w1"},
        "seq": {"N": "1"},
    }

    def update(attribute: str, value: dict[str, str]) -> None:
        billed.ddb.update_item(
            TableName=billed.table,
            Key=key,
            UpdateExpression="SET #a = :v",
            ExpressionAttributeNames={"#a": attribute},
            ExpressionAttributeValues={":v": value},
        )

    # WHEN it is put, its seq bumped, its projected name changed, and its gsi1sk changed
    put = billed.bill("t.gsi.put", lambda: billed.ddb.put_item(TableName=billed.table, Item=item))
    seq = billed.bill("t.gsi.seq", lambda: update("seq", {"N": "2"}))
    status = billed.bill("t.gsi.name", lambda: update("workflow_name", {"S": "w2"}))
    moved = billed.bill("t.gsi.key", lambda: update("gsi1sk", {"S": "t2"}))
    # THEN each entry (under 1 KB) costs 1 WRU: entering 1, seq 0, name 1, a key change 2 (delete + put)
    assert (put.gsi_wru, seq.gsi_wru, status.gsi_wru, moved.gsi_wru) == (1, 0, 1, 2)


def test_reads_cost_per_started_4_kb_and_a_query_rounds_its_sum_once(billed: Billed) -> None:
    # GIVEN three 3 KB items in one partition
    for n in range(3):
        item = {**billed.item(3 * KB), "sk": {"S": f"q#{n}"}}
        billed.ddb.put_item(TableName=billed.table, Item=item)
    key = {"pk": {"S": PK}, "sk": {"S": "q#0"}}
    size = item_size({**billed.item(3 * KB), "sk": {"S": "q#0"}})
    # WHEN one is read strongly and eventually consistently, and the three are queried
    strong = billed.bill(
        "t.get", lambda: billed.ddb.get_item(TableName=billed.table, Key=key, ConsistentRead=True)
    )
    eventual = billed.bill("t.get.eventual", lambda: billed.ddb.get_item(TableName=billed.table, Key=key))
    query = billed.bill(
        "t.query",
        lambda: billed.ddb.query(
            TableName=billed.table,
            KeyConditionExpression="pk = :p AND begins_with(sk, :q)",
            ExpressionAttributeValues={":p": {"S": PK}, ":q": {"S": "q#"}},
            ProjectionExpression="pk",  # a projection does not make the read cheaper
            ConsistentRead=True,
        ),
    )
    # THEN a 3 KB get is 1 RRU (half eventually consistent), the Query ceil(3 x size / 4 KB)
    assert strong.rru == math.ceil(size / (4 * KB)) == 1
    assert eventual.rru == 0.5
    assert query.rru == math.ceil(3 * size / (4 * KB)) == 3


def test_sqs_bills_a_request_per_started_64_kb_of_payload(billed: Billed) -> None:
    # GIVEN a 70 KB message body
    url = billed.world.config.workflow_queue_url
    body = "m" * (70 * KB)
    # WHEN it is sent, received, deleted, and the queue is polled once more
    sent = billed.bill("t.sqs.send", lambda: billed.sqs.send_message(QueueUrl=url, MessageBody=body))
    received: dict[str, Any] = {}
    got = billed.bill("t.sqs.receive", lambda: received.update(billed.sqs.receive_message(QueueUrl=url)))
    handle = received["Messages"][0]["ReceiptHandle"]
    deleted = billed.bill(
        "t.sqs.delete", lambda: billed.sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
    )
    empty = billed.bill("t.sqs.empty", lambda: billed.sqs.receive_message(QueueUrl=url))
    # THEN the send and the receive are ceil(70 / 64) = 2 requests, the delete 1
    assert sent.sqs_requests == got.sqs_requests == math.ceil(70 / 64) == 2
    assert deleted.sqs_requests == 1
    # AND an empty receive is a request, kept apart (a poller's cost, not a step's)
    assert (empty.sqs_requests, empty.sqs_empty_receives) == (0, 1)
