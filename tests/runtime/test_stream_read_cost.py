"""A stream read with a limit costs O(limit), on both Worlds, and numbers values as a full read does.

Chunks are appended through the World's contract (``world.streams.append``) as
step writers append them, duplicates of a retried attempt included; what each
read cost is counted at the World (chunks returned) and at the serializer
(values decoded). The API's ``?limit=`` and its stream-name check are tried over
HTTP (``handle_http``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import http_event
from world_aws import Workflows
from world_aws.api.app import handle_http
from world_aws.client.stream_reader import StreamCursor
from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, StreamStore
from world_aws.contract.world import ForwardingWorld, World
from world_aws.errors import BadInput
from world_aws.serde.codec import Serializer

from .harness import Harness

NAME = "numbers"


class CountingSerializer(Serializer):
    """The app's serializer, counting each value it decodes (a chunk's list is one decode too)."""

    def __init__(self) -> None:
        super().__init__()
        self.decoded = 0

    def loads(self, data: bytes, **kwargs: Any) -> Any:
        self.decoded += 1
        return super().loads(data, **kwargs)


def append(
    harness: Harness,
    run_id: str,
    position: int,
    writer: str,
    seq: int,
    values: list[Any],
    closed: bool = False,
) -> None:
    serializer = Serializer()
    data = serializer.dumps([serializer.dumps(v) for v in values])
    chunk = StreamChunk(position, writer, 1, seq, len(values), data, closed, harness.clock.now())
    harness.world.streams.append(run_id, NAME, chunk)


def started_run(harness: Harness) -> str:
    app = Workflows()

    @app.workflow
    async def idle() -> None:
        return None

    runtime = harness.runtime_for(app)
    return runtime.start("idle").run_id


def long_stream(harness: Harness, run_id: str, chunks: int, per_chunk: int = 100) -> None:
    for position in range(chunks):
        base = position * per_chunk
        append(
            harness,
            run_id,
            position,
            "step_a",
            base,
            list(range(base, base + per_chunk)),
            position == chunks - 1,
        )


class CountedStreams:
    """A World's stream store, recording how many chunks each ``read`` returned."""

    def __init__(self, inner: StreamStore) -> None:
        self.inner = inner
        self.reads: list[int] = []

    def append(self, run_id: str, name: str, chunk: StreamChunk) -> None:
        self.inner.append(run_id, name, chunk)

    def read(
        self, run_id: str, name: str, *, after: int = -1, limit: int = MAX_READ_CHUNKS
    ) -> list[StreamChunk]:
        chunks = self.inner.read(run_id, name, after=after, limit=limit)
        self.reads.append(len(chunks))
        return chunks

    def tail(self, run_id: str, name: str) -> int:
        return self.inner.tail(run_id, name)


def counted(harness: Harness) -> tuple[World, CountedStreams]:
    world = ForwardingWorld(harness.world)
    world.streams = streams = CountedStreams(harness.world.streams)
    return world, streams


def test_a_limited_read_reads_and_decodes_only_what_it_returns(harness: Harness) -> None:
    run_id = started_run(harness)
    long_stream(harness, run_id, chunks=30)  # 3,000 values in 30 chunks of 100
    serializer = CountingSerializer()
    world, streams = counted(harness)
    cursor = StreamCursor(world, serializer, run_id, NAME)
    # WHEN one value is read from the start
    assert cursor.poll(1) == [(0, 0)]
    # THEN one chunk was read and two decodes made (its list, its first value)
    assert streams.reads == [1]
    assert serializer.decoded == 2 and cursor.more
    # AND the next poll goes on from there, inside the same chunk
    assert cursor.poll(2) == [(1, 1), (2, 2)]
    # AND from deep in the stream: the chunks before start_index are counted, not decoded
    serializer.decoded = 0
    deep = StreamCursor(world, serializer, run_id, NAME, start_index=2_950)
    assert deep.poll(2) == [(2_950, 2_950), (2_951, 2_951)]
    assert serializer.decoded == 3


def test_limited_polls_number_values_as_one_full_read_does(harness: Harness) -> None:
    run_id = started_run(harness)
    # GIVEN chunks with a retried attempt's rewrite of values already appended, two writers
    append(harness, run_id, 0, "step_a", 0, ["a0", "a1", "a2", "a3"])
    append(harness, run_id, 1, "step_a", 0, ["a0", "a1", "a2", "a3", "a4"])  # a retry: a4 is new
    append(harness, run_id, 2, "step_b", 0, ["b0", "b1"])
    append(harness, run_id, 3, "step_a", 2, ["a2", "a3", "a4", "a5"])  # a duplicate delivery
    append(harness, run_id, 4, "step_b", 2, ["b2"], closed=True)
    append(harness, run_id, 5, "step_b", 3, ["after the close"])
    whole = StreamCursor(harness.world, Serializer(), run_id, NAME).poll()
    assert [value for _, value in whole] == ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "a5", "b2"]
    for limit in range(1, 11):
        # WHEN one cursor polls with a limit until the stream ends
        cursor = StreamCursor(harness.world, Serializer(), run_id, NAME)
        seen: list[tuple[int, Any]] = []
        while not cursor.closed:
            got = cursor.poll(limit)
            assert len(got) <= limit
            seen += got
        # THEN it reads what one full read does, each value once
        assert seen == whole, limit
        # AND each resumed read from an index agrees too
        for start in range(len(whole) + 1):
            again = StreamCursor(harness.world, Serializer(), run_id, NAME, start_index=start).poll(limit)
            assert again == whole[start : start + limit], (limit, start)


def test_the_api_answers_limit_one_from_one_chunk_and_pages_on(harness: Harness) -> None:
    run_id = started_run(harness)
    long_stream(harness, run_id, chunks=20)
    world, streams = counted(harness)
    runtime = harness.runtime_for(Workflows(), world=world)
    response = handle_http(http_event("GET", f"/runs/{run_id}/streams/{NAME}", query={"limit": "1"}), runtime)
    lines = [json.loads(line) for line in response["body"].splitlines()]
    assert response["statusCode"] == 200
    assert lines == [{"index": 0, "value": 0}, {"next_index": 1, "done": False}]
    assert streams.reads == [1]
    response = handle_http(
        http_event("GET", f"/runs/{run_id}/streams/{NAME}", query={"start_index": "1998", "limit": "5"}),
        runtime,
    )
    lines = [json.loads(line) for line in response["body"].splitlines()]
    assert lines == [
        {"index": 1998, "value": 1998},
        {"index": 1999, "value": 1999},
        {"next_index": 2000, "done": True},
    ]


@pytest.mark.parametrize("name", ["numbers\n", "numbers\r\n", "\nnumbers", "num bers", "a" * 129, "num#bers"])
def test_a_stream_name_must_match_whole(harness: Harness, name: str) -> None:
    run_id = started_run(harness)
    with pytest.raises(BadInput, match="stream name must be 1-128 characters") as refused:
        StreamCursor(harness.world, Serializer(), run_id, name)
    assert repr(name) in str(refused.value)
    with pytest.raises(BadInput, match="stream name"):
        harness.world.streams.read(run_id, name)
    encoded = "".join(ch if ch.isalnum() else f"%{ord(ch):02X}" for ch in name)
    response = handle_http(http_event("GET", f"/runs/{run_id}/streams/{encoded}"), harness.runtime)
    assert response["statusCode"] == 400
    assert repr(name) in json.loads(response["body"])["error"]["message"]
