"""What a delivery handed over to an older deployment costs (README "Deploying changes").

A run pinned to an older version has each delivery handed over: the newest consumer reads
enough to know the run's deployment, then invokes ``function:<version>`` and waits. The reads
are measured (the same workload on the memory World, on one deployment and pinned to an older
one than the receiver's, call counts compared per handed-over delivery); the durations are a
model as in ``bench.cost``: the callee's (``--callee-ms``) plus an invoke round trip
(``--invoke-ms``), billed at 1024 MB arm64.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from bench.prices import PRICES
from harness.harness import memory_harness
from world_aws import Workflows, create_hook
from world_aws.contract.world import Delivery, HandlerResult
from world_aws.local.memory import MemoryWorld
from world_aws.local.memory_stats import Stat
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import DeployedWorld

MEMORY_GB = 1.0  # template.yaml: MemorySize 1024
# DynamoDB units of the reads a receiver makes before handing over (on-demand, eventually
# consistent reads cost half: these are consistent).
RRU_PER_RUN_READ = 1.0  # the run item (GetItem, under 4 KB)
RRU_PER_LOG_READ = 1.0  # a Query page of a short log (under 4 KB)


def app() -> Workflows:
    workflows = Workflows()

    @workflows.step(name="bench.first")
    def first(n: int) -> int:
        return n + 1

    @workflows.step(name="bench.second")
    def second(n: int) -> int:
        return n * 2

    @workflows.workflow(name="bench.pinned")
    async def pinned(n: int) -> int:
        value = await first(n)
        bump = await create_hook(token=f"bench:{n}")
        return await second(value + int(bump))

    return workflows


class CountingHandover:
    """Hands deliveries to the older deployment's runtime, counting them."""

    def __init__(self) -> None:
        self.old: Runtime | None = None
        self.count = 0

    def hand_over(self, deployment_id: str, delivery: Delivery) -> HandlerResult:
        assert self.old is not None and self.old.world.deployment_id() == deployment_id
        self.count += 1
        return self.old.handle(delivery)


@dataclass(frozen=True)
class Measured:
    deliveries: int
    handed_over: int
    reads: dict[str, int]


def measure(runs: int, *, pinned_elsewhere: bool) -> Measured:
    """Start ``runs`` runs, then resume their hooks; the counts of the second half (after the resume)."""
    with memory_harness() as harness:
        world = harness.world
        assert isinstance(world, MemoryWorld)
        config = RuntimeConfig(replay_cache_runs=0)
        handover = CountingHandover()
        old = Runtime(DeployedWorld(world, "dpl_1"), app(), config, handover=handover)
        handover.old = old
        handles = [old.start("bench.pinned", n) for n in range(runs)]
        harness.settle(None, runtime=old)
        assert all(h.status().value == "running" for h in handles)
        new = Runtime(DeployedWorld(world, "dpl_2"), app(), config, handover=handover)
        receiver = new if pinned_elsewhere else old
        before = world.stats.snapshot()
        for n in range(runs):
            receiver.resume_hook(f"bench:{n}", 1)
        for n, handle in enumerate(handles):
            harness.settle(handle, runtime=receiver)
            assert handle.result(timeout=0) == (n + 2) * 2  # (n + 1 + the hook's 1) * 2
        after = world.stats.snapshot()
        new.close()
        old.close()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    return Measured(delta.get(Stat.DELIVERIES.value, 0), handover.count, delta)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.handover", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--invoke-ms", type=float, default=20.0, help="a synchronous invoke's round trip")
    parser.add_argument(
        "--callee-ms", type=float, action="append", help="the old version's duration (repeatable)"
    )
    args = parser.parse_args(argv)
    direct = measure(args.runs, pinned_elsewhere=False)
    handed = measure(args.runs, pinned_elsewhere=True)
    assert handed.handed_over, "no delivery was handed over"
    per = handed.handed_over
    extra = {
        k: (handed.reads.get(k, 0) - direct.reads.get(k, 0)) / per
        for k in (Stat.RUN_READS.value, Stat.EVENT_LISTS.value, Stat.STEP_READS.value)
    }
    rru = extra[Stat.RUN_READS.value] * RRU_PER_RUN_READ + extra[Stat.EVENT_LISTS.value] * RRU_PER_LOG_READ
    print(f"{args.runs} runs, {handed.handed_over} deliveries handed over ({direct.deliveries} direct)")
    shown = ", ".join(f"{k} {v:.2f}" for k, v in extra.items())
    print(f"extra World reads per handed-over delivery (measured): {shown}")
    print()
    print("| old version's duration | extra $ per million hand-overs | Lambda request | duration | reads |")
    print("|---:|---:|---:|---:|---:|")
    request = PRICES["lambda_request"].of(1_000_000)
    reads = PRICES["dynamodb_rru"].of(rru * 1_000_000)
    for callee in args.callee_ms or [50.0, 200.0, 1000.0]:
        seconds = (callee + args.invoke_ms) / 1000
        duration = PRICES["lambda_gb_second_arm64"].of(seconds * MEMORY_GB * 1_000_000)
        total = request + duration + reads
        print(f"| {callee:.0f} ms | {total:.2f} | {request:.2f} | {duration:.2f} | {reads:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
