"""``GET /runs/{run_id}/streams/{name}``: NDJSON lines, a resume cursor, a long poll, 404/400."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from world_aws import Workflows, get_writable
from world_aws.api.app import handle_http
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import MemoryWorld
from world_aws.runtime.runtime import Runtime

from .conftest import http_event, memory_runtime

app = Workflows()


@app.step
def count_to(n: int, close: bool) -> int:
    writer = get_writable("numbers")
    for i in range(n):
        writer.write({"n": i, "raw": b"\x00"})
    if close:
        writer.close()
    return n


@app.workflow
async def counting(n: int, close: bool = True) -> int:
    return await count_to(n, close)


@dataclass
class StreamApi:
    runtime: Runtime
    world: MemoryWorld
    clock: ManualClock

    def read(self, run_id: str, name: str = "numbers", **query: str) -> tuple[int, str, list[Any]]:
        response = handle_http(http_event("GET", f"/runs/{run_id}/streams/{name}", query=query), self.runtime)
        text = response["body"]
        if response["statusCode"] != 200:
            return response["statusCode"], response["headers"]["content-type"], [json.loads(text)]
        assert text.endswith("\n")
        lines = [json.loads(line) for line in text.splitlines()]
        return response["statusCode"], response["headers"]["content-type"], lines


@pytest.fixture
def api() -> Iterator[StreamApi]:
    with memory_runtime(app) as (runtime, world, clock):
        yield StreamApi(runtime, world, clock)


def test_a_closed_stream_is_served_as_ndjson_lines_with_a_done_cursor(api: StreamApi) -> None:
    handle = api.runtime.start("counting", 3)
    api.world.memory_queue.drain(api.runtime.handle)
    status, content_type, lines = api.read(handle.run_id)
    assert (status, content_type) == (200, "application/x-ndjson")
    assert lines == [
        {"index": 0, "value": {"n": 0, "raw": "\x00"}},
        {"index": 1, "value": {"n": 1, "raw": "\x00"}},
        {"index": 2, "value": {"n": 2, "raw": "\x00"}},
        {"next_index": 3, "done": True},
    ]


def test_start_index_and_limit_page_through_the_stream(api: StreamApi) -> None:
    handle = api.runtime.start("counting", 5)
    api.world.memory_queue.drain(api.runtime.handle)
    _, _, first = api.read(handle.run_id, start_index="1", limit="2")
    assert [line.get("index") for line in first] == [1, 2, None]
    assert first[-1] == {"next_index": 3, "done": False}
    _, _, rest = api.read(handle.run_id, start_index="3")
    assert [line.get("index") for line in rest] == [3, 4, None]
    assert rest[-1] == {"next_index": 5, "done": True}


def test_an_open_stream_of_a_running_run_answers_not_done_after_its_long_poll(api: StreamApi) -> None:
    # GIVEN a run started but not yet driven: nothing written
    handle = api.runtime.start("counting", 2, False)
    before = api.clock.now()
    # WHEN a reader long-polls for 5 s THEN it waited on the World's clock and got nothing yet
    _, _, lines = api.read(handle.run_id, wait="5")
    assert lines == [{"next_index": 0, "done": False}]
    assert (api.clock.now() - before).total_seconds() >= 5
    # WHEN the run ends without closing the stream THEN the values come and the stream is done
    api.world.memory_queue.drain(api.runtime.handle)
    _, _, lines = api.read(handle.run_id)
    assert [line.get("index") for line in lines] == [0, 1, None]
    assert lines[-1] == {"next_index": 2, "done": True}


def test_an_unknown_run_is_404_and_a_bad_name_or_index_is_400(api: StreamApi) -> None:
    handle = api.runtime.start("counting", 1)
    status, _, [body] = api.read("wrun_missing")
    assert status == 404 and "wrun_missing" in body["error"]["message"]
    status, _, [body] = api.read(handle.run_id, name="bad%20name")
    assert status == 400
    status, _, [body] = api.read(handle.run_id, start_index="-1")
    assert status == 400 and "start_index" in body["error"]["message"]


@app.step
def big_values(count: int) -> int:
    writer = get_writable("big")
    for i in range(count):
        writer.write(f"{i}:" + "x" * 1024 * 1024)
    writer.close()
    return count


@app.workflow
async def large(count: int) -> int:
    return await big_values(count)


def test_an_answer_stops_short_of_the_response_cap_and_says_where_to_go_on(api: StreamApi) -> None:
    # GIVEN six values of 1 MiB each
    handle = api.runtime.start("large", 6)
    api.world.memory_queue.drain(api.runtime.handle)
    # WHEN they are read THEN the first answer holds what fits in 4 MiB, the next the rest
    _, _, first = api.read(handle.run_id, name="big")
    assert [line.get("index") for line in first] == [0, 1, 2, None]
    assert first[-1] == {"next_index": 3, "done": False}
    _, _, rest = api.read(handle.run_id, name="big", start_index="3")
    assert [line["value"][:2] for line in rest[:-1]] == ["3:", "4:", "5:"]
    assert rest[-1] == {"next_index": 6, "done": True}
