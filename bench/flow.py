"""Flow control (issue 41), measured on the local stacks: the done-when figures, wall clock.

    python -m bench.flow                      # both, on the embedded stack (moto)
    python -m bench.flow --world memory --runs 200

1. ``Concurrency(limit=3, key=customer)``: ``--runs`` checkout runs over 4 customers;
   prints the wall time and the most attempts of one customer that overlapped (from
   the recorded attempts; at most 3).
2. ``RateLimit("20/s")``: one run gathering ``--calls`` calls; prints the wall time
   (the issue asks within 15 s for 200) and the most starts in any one-second window,
   then the same calls of a step without a limit (what the stack itself takes).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import timedelta

from world_aws import Concurrency, RateLimit, Runtime, Workflows
from world_aws.contract.world import World
from world_aws.local.stack import local_stack
from world_aws.testing.flow_checks import attempts, group, max_overlap_by_key, max_starts_in_window

CUSTOMERS = ["cust-1", "cust-2", "cust-3", "cust-4"]


def flow_app() -> Workflows:
    app = Workflows()

    @app.step(name="charge", concurrency=Concurrency(limit=3, key=lambda customer, *_: customer))
    def charge(customer: str, n: int) -> int:
        time.sleep(0.01)
        return n

    @app.step(name="ask_llm", rate_limit=RateLimit("20/s"))
    def ask_llm(i: int) -> int:
        return i

    @app.step(name="ask_free")
    def ask_free(i: int) -> int:
        return i

    @app.workflow
    async def fan_free(n: int) -> int:
        return len(await asyncio.gather(*(ask_free(i) for i in range(n))))

    @app.workflow
    async def checkout(customer: str, n: int) -> int:
        return await charge(customer, n)

    @app.workflow
    async def fan(n: int) -> int:
        return len(await asyncio.gather(*(ask_llm(i) for i in range(n))))

    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.flow", description=__doc__.splitlines()[0])
    parser.add_argument("--world", choices=["embedded", "memory"], default="embedded")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--part", choices=["both", "concurrency", "rate"], default="both")
    ns = parser.parse_args(argv)
    with local_stack(flow_app(), kind=ns.world) as stack:
        runtime, world = stack.runtime, stack.world
        if ns.part != "rate":
            concurrency(runtime, world, ns.runs)
        if ns.part != "concurrency":
            rate(runtime, world, ns.calls)
    return 0


def concurrency(runtime: Runtime, world: World, count: int) -> None:
    """Run ``count`` checkouts over the customers; print the time and the worst overlap."""
    began = time.perf_counter()
    runs = {runtime.start("checkout", CUSTOMERS[i % 4], i).run_id: CUSTOMERS[i % 4] for i in range(count)}
    for run_id in runs:
        runtime.client.get_run(run_id).result(timeout=600)
    took = time.perf_counter() - began
    overlaps = max_overlap_by_key(group(attempts(world, runs, "charge"), runs), until=world.clock.now())
    print(f"concurrency: {count} runs in {took:.1f} s; most overlapping per customer {overlaps}")


def rate(runtime: Runtime, world: World, calls: int) -> None:
    """Gather ``calls`` rate-limited calls in one run; print the time and the busiest second."""
    began = time.perf_counter()
    handle = runtime.start("fan", calls)
    handle.result(timeout=600)
    took = time.perf_counter() - began
    found = attempts(world, [handle.run_id], "ask_llm")
    most = max_starts_in_window(found, timedelta(seconds=1))
    print(f"rate limit: {calls} calls at 20/s in {took:.1f} s; most starts in one second {most}")
    began = time.perf_counter()
    runtime.start("fan_free", calls).result(timeout=600)
    print(f"baseline: the same {calls} calls without a limit in {time.perf_counter() - began:.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
