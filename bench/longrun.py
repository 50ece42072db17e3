"""Work per step over a long sequential run: ``python -m bench.longrun --steps 10000``.

One workflow awaits ``--steps`` steps in sequence on the memory World (manual clock, every
delivery on this thread), cut into ten slices of steps: steps per second per slice, the
deliveries and event items read per step, and the last slice's throughput over the first's for
each of ``--repeat`` runs and their median (target at least 0.8, items read a constant per
step). Inline (``--max-inline 3``) the chain is one delivery; ``--max-inline 0`` is a delivery
per step. ``--local memory|embedded|both`` runs it as ``world-aws run`` does (``local_stack``,
replays checked cold), with the wall time and, for ``both``, the embedded run's time over the
memory World's (target within 3x). Figures in ``bench/out/longrun*.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from world_aws import Workflows
from world_aws.contract.clock import ManualClock
from world_aws.local.memory import create_memory_world
from world_aws.local.memory_queue import DrainDidNotSettle
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig

OUT = Path(__file__).resolve().parent / "out" / "longrun.json"


def chain_app(ran_at: list[float] | None = None) -> Workflows:
    """``chain(n)``: n steps in sequence; each body appends when it ran to ``ran_at``."""
    app = Workflows()

    @app.step(name="inc")
    def inc(x: int) -> int:
        if ran_at is not None:
            ran_at.append(time.perf_counter())
        return x + 1

    @app.workflow
    async def chain(n: int) -> int:
        x = 0
        for _ in range(n):
            x = await inc(x)
        return x

    return app


def run(steps: int, slices: int = 10, *, max_inline: int = 3) -> dict[str, object]:
    """Run one chain of ``steps`` steps; returns throughput per slice of steps and items read."""
    world = create_memory_world(clock=ManualClock())
    ran_at: list[float] = []
    runtime = Runtime(world, chain_app(ran_at), RuntimeConfig(max_inline_steps=max_inline))
    try:
        began = time.perf_counter()
        handle = runtime.start("chain", steps)
        delivered = 0
        while not handle.status().terminal:
            try:
                made = world.memory_queue.drain(runtime.handle, max_deliveries=1000)
            except DrainDidNotSettle:
                made = 1000
            if made == 0:
                break
            delivered += made
        stats = world.stats.snapshot()
        rates = _rates(began, ran_at, slices)
        return {
            "steps": steps,
            "max_inline_steps": max_inline,
            "status": handle.status().value,
            "deliveries": delivered,
            "steps_per_second": [round(r, 1) for r in rates],
            "last_over_first": round(rates[-1] / rates[0], 3) if len(rates) > 1 else None,
            "event_items_read": stats["event_items_read"],
            "event_items_read_per_step": round(stats["event_items_read"] / steps, 3),
        }
    finally:
        runtime.close()
        world.close()


def run_local(steps: int, kind: str, slices: int = 10) -> dict[str, object]:
    """One chain of ``steps`` steps on a local stack of ``kind``, as ``world-aws run`` runs it."""
    from world_aws.local.stack import local_stack

    ran_at: list[float] = []
    with local_stack(chain_app(ran_at), kind=kind, run_schedules=False) as stack:
        began = time.perf_counter()
        handle = stack.runtime.start("chain", steps)
        result = handle.result(timeout=3600)
        took = time.perf_counter() - began
    rates = _rates(began, ran_at, slices)
    return {
        "world": kind,
        "steps": steps,
        "result": result,
        "seconds": round(took, 2),
        "steps_per_second": [round(r, 1) for r in rates],
        "last_over_first": round(rates[-1] / rates[0], 3) if len(rates) > 1 else None,
    }


def main_local(steps: int, kinds: list[str]) -> int:
    results = {kind: run_local(steps, kind) for kind in kinds}
    for kind, result in results.items():
        rates: list[float] = list(result["steps_per_second"])  # type: ignore[call-overload]
        print(f"{kind}: {steps} steps in {result['seconds']} s; steps/s per slice: {rates}")
        print(f"{kind}: last/first slice {result['last_over_first']}")
    summary: dict[str, object] = {"steps": steps, "runs": results}
    if len(results) == 2:
        ratio = float(results["embedded"]["seconds"]) / max(float(results["memory"]["seconds"]), 1e-9)  # type: ignore[arg-type]
        summary["embedded_over_memory"] = round(ratio, 2)
        print(f"embedded/memory wall time: {ratio:.2f}")
    out = OUT.with_name("longrun_local.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["result"] == steps for r in results.values()) else 1


def _rates(began: float, ran_at: list[float], slices: int) -> list[float]:
    """Steps per second in each of ``slices`` equal slices of the bodies' run times."""
    size = len(ran_at) // slices
    if size == 0:
        return []
    rates = []
    start = began
    for n in range(slices):
        end = ran_at[(n + 1) * size - 1]
        rates.append(size / max(end - start, 1e-9))
        start = end
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--max-inline", type=int, default=3, help="WORKFLOW_MAX_INLINE_STEPS (0: dispatched)")
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs; the ratio reported is their median (a slice is ~0.3 s)"
    )
    parser.add_argument(
        "--local",
        choices=["memory", "embedded", "both"],
        help="run it as `world-aws run` does, on a local stack (see the module's docstring)",
    )
    ns = parser.parse_args(argv)
    if ns.local is not None:
        return main_local(ns.steps, ["memory", "embedded"] if ns.local == "both" else [ns.local])
    results = [run(ns.steps, max_inline=ns.max_inline) for _ in range(max(1, ns.repeat))]
    ratios = [float(r["last_over_first"]) for r in results if r["last_over_first"] is not None]  # type: ignore[arg-type]
    median = round(statistics.median(ratios), 3) if ratios else None
    result = results[-1]
    rates: list[float] = list(result["steps_per_second"])  # type: ignore[call-overload]
    for n, rate in enumerate(rates, start=1):
        print(f"slice {n:2d}: {rate:8.1f} steps/s (the last run)")
    print(f"last/first slice, each run: {ratios}; median {median}")
    print(f"deliveries: {result['deliveries']}")
    print(f"event items read: {result['event_items_read']} ({result['event_items_read_per_step']} per step)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    summary = {**result, "runs": results, "last_over_first_median": median}
    OUT.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["status"] == "completed" for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
