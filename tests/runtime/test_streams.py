"""Issue 16 item 2: streams written by steps, read by callers (every World).

A step writes with ``get_writable()``; ``RunHandle.readable()`` and the cursor read
each value once, in order, resumable by index; a retried attempt's rewrite of the
values its failed attempt already appended is not read twice.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harness.harness import Harness
from world_aws import Workflows, get_step_metadata, get_writable
from world_aws.client.handle import RunHandle
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput
from world_aws.workflow.streams import FLUSH_VALUES


def read_all(handle: RunHandle, name: str = "default", start_index: int = 0) -> list[Any]:
    async def collect() -> list[Any]:
        return [value async for value in handle.readable(name, start_index)]

    return asyncio.run(collect())


def progress_app(attempts: list[int], *, fail_first: bool = False, close: bool = True) -> Workflows:
    app = Workflows()

    @app.step(max_retries=2)
    def produce(n: int) -> int:
        attempt = get_step_metadata().attempt
        attempts.append(attempt)
        writer = get_writable()
        for i in range(n):
            writer.write({"i": i})
            if fail_first and attempt == 1 and i == n // 2:
                writer.flush()
                raise ConnectionError("lost the upstream half way")
        if close:
            writer.close()
        return n

    @app.step
    async def finish(n: int) -> str:
        await get_writable("log").write(f"done {n}")
        return "ok"

    @app.workflow
    async def progress(n: int) -> str:
        await produce(n)
        return await finish(n)

    return app


def test_values_a_step_writes_are_read_in_order_until_the_stream_closes(harness: Harness) -> None:
    # GIVEN a step writing 5 values to the default stream and closing it, then another stream
    runtime = harness.runtime_for(progress_app([]))
    handle = runtime.start("progress", 5)
    # WHEN the run settles and a caller reads both streams
    assert harness.settle(handle) is RunStatus.COMPLETED
    # THEN each stream's values come once, in order; the open one ends with its run
    assert read_all(handle) == [{"i": i} for i in range(5)]
    assert read_all(handle, "log") == ["done 5"]
    assert read_all(handle, "never-written") == []


def test_a_reader_resumes_from_start_index(harness: Harness) -> None:
    # GIVEN a run whose step wrote more values than one chunk holds
    runtime = harness.runtime_for(progress_app([]))
    n = FLUSH_VALUES + 7
    handle = runtime.start("progress", n)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # WHEN a reader resumes at index 98
    resumed = read_all(handle, start_index=98)
    # THEN it gets the values from the 98th on, and the cursor numbers them as a full read does
    assert resumed == [{"i": i} for i in range(98, n)]
    cursor = handle.stream_cursor(start_index=98)
    assert [index for index, _ in cursor.poll()] == list(range(98, n))
    assert cursor.closed
    assert len(harness.world.streams.read(handle.run_id, "default")) == 2


def test_a_retried_step_does_not_show_its_rewritten_values_twice(harness: Harness) -> None:
    # GIVEN a step whose first attempt appends 3 of its 6 values, then fails
    attempts: list[int] = []
    runtime = harness.runtime_for(progress_app(attempts, fail_first=True))
    handle = runtime.start("progress", 6)
    # WHEN the second attempt writes all 6 again
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert attempts == [1, 2]
    # THEN the stream holds the first three twice, and readers see each value once, in order
    chunks = harness.world.streams.read(handle.run_id, "default")
    assert [(c.attempt, c.seq, c.count) for c in chunks] == [(1, 0, 4), (2, 0, 6)]
    assert read_all(handle) == [{"i": i} for i in range(6)]
    assert read_all(handle, start_index=4) == [{"i": 4}, {"i": 5}]


def test_an_open_stream_ends_when_its_run_ends(harness: Harness) -> None:
    # GIVEN a step that writes without closing
    runtime = harness.runtime_for(progress_app([], close=False))
    handle = runtime.start("progress", 3)
    assert harness.settle(handle) is RunStatus.COMPLETED
    # WHEN a caller follows it THEN it gets the values and the iteration ends with the run
    cursor = handle.stream_cursor()
    assert [v for _, v in cursor.poll()] == [{"i": 0}, {"i": 1}, {"i": 2}]
    assert not cursor.closed
    assert cursor.ended()
    assert read_all(handle) == [{"i": 0}, {"i": 1}, {"i": 2}]


def test_a_reader_following_a_live_run_gets_values_as_steps_write_them(memory_harness: Harness) -> None:
    # GIVEN a reader that starts before the run has done anything
    h = memory_harness
    runtime = h.runtime_for(progress_app([], close=False))
    handle = runtime.start("progress", 2)
    pauses: list[int] = []

    def drive(_seconds: float) -> None:  # the reader's pause: one delivery of the run per poll
        pauses.append(1)
        h.drain()

    async def collect() -> list[Any]:
        return [value async for value in handle.readable("log", pause=drive)]

    # WHEN it follows the "log" stream while the run is driven between its polls
    values = asyncio.run(collect())
    # THEN it waited (nothing was written at first), got the value, and ended with the run
    assert values == ["done 2"]
    assert len(pauses) >= 1
    assert handle.status() is RunStatus.COMPLETED


def test_get_writable_outside_a_step_is_refused() -> None:
    with pytest.raises(RuntimeError, match="inside a step"):
        get_writable()


def test_a_bad_stream_name_is_bad_input(harness: Harness) -> None:
    runtime = harness.runtime_for(progress_app([]))
    handle = runtime.start("progress", 1)
    with pytest.raises(BadInput, match="stream name"):
        handle.stream_cursor("a#b")
    with pytest.raises(BadInput, match="start_index"):
        handle.stream_cursor(start_index=-1)
