"""What one page of a long stream costs: ``python -m bench.stream_read [--values N] [--world memory|aws]``.

A stream of ``--values`` integers is appended as a step writer appends them (chunks
of ``FLUSH_VALUES``), then read from index 0 with ``limit=1`` two ways: as the API
read it before its reads were bounded (every value after ``start_index`` decoded,
then the page cut: ``StreamCursor.poll()`` and a slice), and as
``GET /runs/{id}/streams/{name}?limit=1`` reads it now (``handle_http``). Printed
for each: the best wall time of ``--repeat`` reads and the peak of Python memory
allocated during one (``tracemalloc``). On ``--world aws`` the World is the
embedded moto one, so the times include moto's own work.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from world_aws import Workflows
from world_aws.api.app import handle_http
from world_aws.client.stream_reader import StreamCursor
from world_aws.contract.clock import ManualClock
from world_aws.contract.streams import StreamChunk
from world_aws.contract.world import World
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.workflow.streams import FLUSH_VALUES

NAME = "numbers"


def _app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def idle() -> None:
        return None

    return app


@contextmanager
def _world(kind: str) -> Iterator[World]:
    clock = ManualClock()
    if kind == "memory":
        world = create_memory_world(clock=clock)
        try:
            yield world
        finally:
            world.close()
        return
    from world_aws.testing.aws_factory import aws_world

    with aws_world(clock) as aws:
        yield aws


def _fill(runtime: Runtime, run_id: str, values: int) -> None:
    serializer, world = runtime.app.serializer, runtime.world
    for position, base in enumerate(range(0, values, FLUSH_VALUES)):
        batch = list(range(base, min(base + FLUSH_VALUES, values)))
        data = serializer.dumps([serializer.dumps(v) for v in batch])
        closed = base + FLUSH_VALUES >= values
        chunk = StreamChunk(position, "step_bench", 1, base, len(batch), data, closed, world.clock.now())
        world.streams.append(run_id, NAME, chunk)


def _measure(read: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Best seconds of ``repeat`` reads, the peak MiB allocated during one, and its answer."""
    best = float("inf")
    answer: Any = None
    for _ in range(repeat):
        began = time.perf_counter()
        answer = read()
        best = min(best, time.perf_counter() - began)
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1] / (1024 * 1024)
    tracemalloc.stop()
    return best, peak, answer


def run(values: int, kind: str, repeat: int) -> dict[str, Any]:
    with _world(kind) as world:
        runtime = Runtime(world, _app())
        try:
            run_id = runtime.start("idle").run_id
            _fill(runtime, run_id, values)

            def whole_then_cut() -> Any:
                cursor = StreamCursor(world, runtime.app.serializer, run_id, NAME)
                return cursor.poll()[:1]

            def api_limit_one() -> Any:
                event = {
                    "version": "2.0",
                    "rawPath": f"/runs/{run_id}/streams/{NAME}",
                    "queryStringParameters": {"limit": "1"},
                    "requestContext": {"http": {"method": "GET"}, "requestId": "bench"},
                }
                response = handle_http(event, runtime)
                return [json.loads(line) for line in response["body"].splitlines()]

            before = _measure(whole_then_cut, repeat)
            after = _measure(api_limit_one, repeat)
            assert before[2] == [(0, 0)], before[2]
            assert after[2] == [{"index": 0, "value": 0}, {"next_index": 1, "done": False}], after[2]
            return {
                "world": kind,
                "values": values,
                "decode_all_then_cut": {"seconds": round(before[0], 4), "peak_mib": round(before[1], 1)},
                "api_limit_1": {"seconds": round(after[0], 4), "peak_mib": round(after[1], 2)},
            }
        finally:
            runtime.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--values", type=int, default=100_000)
    parser.add_argument("--world", choices=("memory", "aws"), default="memory")
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args(argv)
    print(json.dumps(run(ns.values, ns.world, ns.repeat), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
