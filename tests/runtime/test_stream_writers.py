"""Stream writers under contention and duplication (every World), below the step consumer.

Writers of several steps racing for one stream's tail, two attempts of one step
writing at once, and a chunk stored twice (a lost answer) all read back as each
value once, every step's values in its order.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from harness.harness import Harness
from world_aws import Workflows
from world_aws.client.stream_reader import StreamCursor
from world_aws.contract.world import World
from world_aws.testing.conformance.support import create_run
from world_aws.workflow.context import StepMetadata
from world_aws.workflow.streams import StreamWriter

SERIALIZER = Workflows().serializer


def writer(world: World, run_id: str, step_id: str, attempt: int = 1) -> StreamWriter:
    return StreamWriter(world, SERIALIZER, StepMetadata(run_id, step_id, "s", attempt), "shared")


def read(world: World, run_id: str, start_index: int = 0) -> StreamCursor:
    return StreamCursor(world, SERIALIZER, run_id, "shared", start_index)


def test_steps_racing_for_one_streams_tail_lose_no_value(harness: Harness) -> None:
    # GIVEN 6 steps, each writing 12 values to one stream, flushing every 3, all at once
    world = harness.world
    run_id = create_run(world)

    def write_all(n: int) -> None:
        w = writer(world, run_id, f"step_{n}")
        for i in range(12):
            w.write((n, i))
            if i % 3 == 2:
                w.flush()

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(write_all, range(6)))
    # THEN a reader gets the 72 values, each once, every step's in its own order
    cursor = read(world, run_id)
    got = cursor.poll()
    assert [index for index, _ in got] == list(range(72))
    values = [value for _, value in got]
    assert sorted(values) == [(n, i) for n in range(6) for i in range(12)]
    for n in range(6):
        assert [i for m, i in values if m == n] == list(range(12))
    assert len(world.streams.read(run_id, "shared")) == 24


def test_two_attempts_of_one_step_writing_at_once_are_read_once(harness: Harness) -> None:
    # GIVEN attempt 1 and attempt 2 of one step interleaving their chunks
    world = harness.world
    run_id = create_run(world)
    first, second = writer(world, run_id, "step_x", 1), writer(world, run_id, "step_x", 2)
    for w, values in ((first, (0, 1)), (second, (0, 1, 2)), (first, (2, 3)), (second, (3, 4, 5))):
        for v in values:
            w.write(v)
        w.flush()
    second.close()
    first.write(4)
    first.flush()  # after the close: not read
    # THEN each value is read once, in order, and the stream is closed
    cursor = read(world, run_id)
    assert cursor.poll() == [(i, i) for i in range(6)]
    assert cursor.closed
    assert read(world, run_id, start_index=3).poll() == [(3, 3), (4, 4), (5, 5)]


def test_a_chunk_stored_twice_is_read_once(harness: Harness) -> None:
    # GIVEN a chunk whose answer was lost, so its writer appended it again at the next position
    world = harness.world
    run_id = create_run(world)
    w = writer(world, run_id, "step_y")
    for v in ("a", "b"):
        w.write(v)
    w.flush()
    [stored] = world.streams.read(run_id, "shared")
    world.streams.append(run_id, "shared", dataclasses.replace(stored, position=1))
    w.write("c")
    w.close()
    # THEN the reader keeps the first copy
    assert [value for _, value in read(world, run_id).poll()] == ["a", "b", "c"]
    assert len(world.streams.read(run_id, "shared")) == 3
