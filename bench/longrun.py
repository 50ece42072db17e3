"""Work per step over a long sequential run: ``python -m bench.longrun --steps 10000``.

One workflow awaits ``--steps`` steps one after another on the in-memory World
(manual clock, every delivery on this thread through the World's own queue), and
the run is cut into ten equal slices of deliveries. Printed per slice: deliveries
per second; then the event items the runtime read in all, per step. Issue 12's
target: the last slice's throughput at least 0.8 times the first's, and items read
O(n) (a constant per step). The figures land in ``bench/out/longrun.json``.

Wall time is noisy when other work shares the machine: compare slices of one run.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from world_aws import Workflows
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import create_memory_world
from world_aws.local.memory_queue import DrainDidNotSettle
from world_aws.runtime.runtime import Runtime

OUT = Path(__file__).resolve().parent / "out" / "longrun.json"


def chain_app() -> Workflows:
    app = Workflows()

    @app.step(name="inc")
    def inc(x: int) -> int:
        return x + 1

    @app.workflow
    async def chain(n: int) -> int:
        x = 0
        for _ in range(n):
            x = await inc(x)
        return x

    return app


def run(steps: int, slices: int = 10) -> dict[str, object]:
    """Run one chain of ``steps`` steps; returns throughput per slice and items read."""
    world = create_memory_world(clock=ManualClock())
    runtime = Runtime(world, chain_app())
    try:
        handle = runtime.start("chain", steps)
        per_slice = max(1, steps // slices)
        rates: list[float] = []
        delivered = 0
        while not handle.status().terminal:
            began = time.perf_counter()
            try:
                made = world.memory_queue.drain(runtime.handle, max_deliveries=per_slice)
            except DrainDidNotSettle:
                made = per_slice
            if made == 0:
                break
            delivered += made
            rates.append(made / max(time.perf_counter() - began, 1e-9))
        stats = world.stats.snapshot()
        full = rates[:slices]
        return {
            "steps": steps,
            "status": handle.status().value,
            "deliveries": delivered,
            "deliveries_per_second": [round(r, 1) for r in full],
            "last_over_first": round(full[-1] / full[0], 3) if len(full) > 1 else None,
            "event_items_read": stats["event_items_read"],
            "event_items_read_per_step": round(stats["event_items_read"] / steps, 3),
        }
    finally:
        runtime.close()
        world.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    ns = parser.parse_args(argv)
    result = run(ns.steps)
    rates: list[float] = list(result["deliveries_per_second"])  # type: ignore[call-overload]
    for n, rate in enumerate(rates, start=1):
        print(f"slice {n:2d}: {rate:8.1f} deliveries/s")
    print(f"last/first slice: {result['last_over_first']}")
    print(f"event items read: {result['event_items_read']} ({result['event_items_read_per_step']} per step)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0 if result["status"] == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
