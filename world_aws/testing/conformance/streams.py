"""Conformance: stream chunks (``contract/streams``): a conditional append at the tail, read in order."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.streams import StreamChunk
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict
from world_aws.testing.conformance.support import create_run, xfail_on_aws


def chunk(
    clock: ManualClock, position: int, *, writer: str = "step_a", seq: int = 0, data: bytes = b"x"
) -> StreamChunk:
    return StreamChunk(position, writer, 1, seq, 1, data, False, clock.now())


def test_appended_chunks_are_read_back_in_position_order(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    first, second = chunk(clock, 0, data=b"one"), chunk(clock, 1, seq=1, data=b"two")
    world.streams.append(run_id, "default", first)
    world.streams.append(run_id, "default", second)
    assert world.streams.read(run_id, "default") == [first, second]
    assert world.streams.read(run_id, "default", after=0) == [second]
    assert world.streams.read(run_id, "default", after=-1, limit=1) == [first]
    assert world.streams.tail(run_id, "default") == 2


def test_an_unknown_stream_is_empty(world: World) -> None:
    run_id = create_run(world)
    assert world.streams.read(run_id, "nothing") == []
    assert world.streams.tail(run_id, "nothing") == 0
    assert world.streams.read("wrun_unknown", "default") == []


def test_streams_of_one_run_are_apart(world: World, clock: ManualClock) -> None:
    # "a" is a prefix of "a.b": the store must not mix their chunks
    run_id = create_run(world)
    world.streams.append(run_id, "a", chunk(clock, 0, data=b"a"))
    world.streams.append(run_id, "a.b", chunk(clock, 0, data=b"ab"))
    world.streams.append(run_id, "a.b", chunk(clock, 1, data=b"ab2"))
    assert [c.data for c in world.streams.read(run_id, "a")] == [b"a"]
    assert (world.streams.tail(run_id, "a"), world.streams.tail(run_id, "a.b")) == (1, 2)


def test_append_at_a_taken_position_is_conflict_and_changes_nothing(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    world.streams.append(run_id, "default", chunk(clock, 0, writer="step_a"))
    with pytest.raises(Conflict):
        world.streams.append(run_id, "default", chunk(clock, 0, writer="step_b"))
    assert [c.writer for c in world.streams.read(run_id, "default")] == ["step_a"]


def test_racing_appends_at_one_position_have_one_winner(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)

    def attempt(writer: str) -> bool:
        try:
            world.streams.append(run_id, "default", chunk(clock, 0, writer=writer))
        except Conflict:
            return False
        return True

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(attempt, [f"step_{i}" for i in range(8)]))
    assert won.count(True) == 1
    [stored] = world.streams.read(run_id, "default")
    assert stored.writer == f"step_{won.index(True)}"


def test_a_chunk_over_the_inline_limit_reads_back_byte_for_byte(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    big = bytes(range(256)) * (MAX_INLINE_PAYLOAD_BYTES // 256 + 8)
    world.streams.append(run_id, "default", chunk(clock, 0, data=big))
    [stored] = world.streams.read(run_id, "default")
    assert stored.data == big


def test_a_stream_name_with_a_separator_is_bad_input(world: World, clock: ManualClock) -> None:
    run_id = create_run(world)
    for name in ("a#b", "", "x" * 129, "sp ace"):
        with pytest.raises(BadInput):
            world.streams.append(run_id, name, chunk(clock, 0))


def test_a_read_goes_past_a_one_megabyte_page(world: World, clock: ManualClock) -> None:
    # 12 chunks of 120 KiB (inline) make 1.4 MB: more than one DynamoDB Query page
    run_id = create_run(world)
    for position in range(12):
        data = bytes([position]) * (120 * 1024)
        world.streams.append(run_id, "default", chunk(clock, position, seq=position, data=data))
    read = world.streams.read(run_id, "default")
    assert [c.position for c in read] == list(range(12))
    assert all(c.data == bytes([c.position]) * (120 * 1024) for c in read)
    assert [c.position for c in world.streams.read(run_id, "default", after=3, limit=5)] == [4, 5, 6, 7, 8]


def test_an_append_at_a_negative_position_is_bad_input(world: World, clock: ManualClock) -> None:
    # GIVEN a stream with one chunk
    run_id = create_run(world)
    world.streams.append(run_id, "default", chunk(clock, 0, data=b"first"))
    # WHEN a chunk is appended at position -1
    # THEN it is BadInput naming the position (not a Conflict, which tells a writer that
    # someone took the position and sends it to read the tail and try again)
    with pytest.raises(BadInput, match="position -1"):
        world.streams.append(run_id, "default", chunk(clock, -1, data=b"bad"))
    assert [c.data for c in world.streams.read(run_id, "default")] == [b"first"]


def test_a_read_after_a_position_below_minus_one_starts_at_the_first_chunk(
    world: World, clock: ManualClock
) -> None:
    # GIVEN a stream of five chunks
    run_id = create_run(world)
    for position in range(5):
        world.streams.append(run_id, "default", chunk(clock, position, seq=position, data=bytes([position])))
    # WHEN it is read after position -3 (chunks from -2 on), whole and two at a time
    # THEN the read starts at the first chunk, as a read after -1 does (not at the last ones)
    assert [c.position for c in world.streams.read(run_id, "default", after=-3)] == [0, 1, 2, 3, 4]
    assert [c.position for c in world.streams.read(run_id, "default", after=-3, limit=2)] == [0, 1]


def test_an_append_past_the_tail_is_bad_input_and_leaves_no_gap(
    world: World, clock: ManualClock, request: pytest.FixtureRequest
) -> None:
    xfail_on_aws(
        request,
        "DynamoStreamStore.append is one PutItem conditioned on its own key: it cannot "
        "see whether the position before it is taken without a read or a transaction "
        "(a ConditionCheck), which would double the cost of every chunk",
    )
    # GIVEN a stream with one chunk
    run_id = create_run(world)
    world.streams.append(run_id, "default", chunk(clock, 0, data=b"first"))
    # WHEN a chunk is appended at position 3, past the tail (1)
    # THEN it is BadInput naming the position, and nothing is stored: the chunks stay a
    # gap-free prefix (a chunk at 3 would be read before 1 and 2, which a reader that went
    # past it would then never read)
    with pytest.raises(BadInput, match="position 3"):
        world.streams.append(run_id, "default", chunk(clock, 3, data=b"gap"))
    assert world.streams.tail(run_id, "default") == 1
    assert [c.data for c in world.streams.read(run_id, "default")] == [b"first"]


BAD_CHUNKS: dict[str, tuple[dict[str, object], str]] = {
    "created_at_naive": (
        {"created_at": datetime(2026, 1, 1)},
        "created_at must be a datetime with a timezone",
    ),
    "data_str": ({"data": "text"}, "data must be bytes, not str"),
    "count_str": ({"count": "1"}, "count must be an int of at least 0, not '1'"),
    "seq_negative": ({"seq": -1}, "seq must be an int of at least 0, not -1"),
    "closed_int": ({"closed": 1}, "closed must be a bool, not 1"),
    "writer_empty": ({"writer": ""}, "writer must be a non-empty str, not ''"),
}


@pytest.mark.parametrize("bad", list(BAD_CHUNKS))
def test_a_chunk_with_a_field_of_the_wrong_type_is_bad_input_naming_it(
    world: World, clock: ManualClock, bad: str
) -> None:
    # GIVEN a chunk with one field of the wrong type (a Python caller's StreamChunk is not
    # type-checked: the memory World kept count "1" and closed 1 as given, the DynamoDB World
    # read them back as 1 and True, and failed on str data with a TypeError)
    run_id = create_run(world)
    change, named = BAD_CHUNKS[bad]
    bad_chunk = replace(chunk(clock, 0), **change)  # type: ignore[arg-type]
    # WHEN it is appended
    # THEN it is BadInput naming the field, and the stream stays empty
    with pytest.raises(BadInput, match=re.escape(named)):
        world.streams.append(run_id, "default", bad_chunk)
    assert world.streams.tail(run_id, "default") == 0
