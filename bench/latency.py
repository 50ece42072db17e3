"""Sequential step latency in the model pass: the time between two step bodies.

A moto pass runs the cost meter's ``W2`` shape (``--steps`` trivial steps) to measure each
World op's round trips (``bench.opcosts``); the model pass (``bench.model``) runs ``--steps``
steps whose bodies sleep ``--body-ms`` on the memory World, each op sleeping its round trips,
and notes when each body starts. Overhead per step = one body's start to the next one's, less
the body's time; the target is at most 1.5 DynamoDB round trips with inline execution on
(``WORKFLOW_MAX_INLINE_STEPS=0`` is the kill switch row). ``--gather`` widths also time a
fan-out from start to end in fast rounds and with ``WORKFLOW_INLINE_FAST_SECONDS=0`` (op costs
then also from W3 both ways). Writes ``bench/out/latency.json`` and ``latency.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import itertools
import json
import logging
import shlex
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cost import metered_moto
from bench.cost_run import WORKLOADS, run_workload, template_functions
from bench.instrument import CallRecorder, Latency
from bench.measure import PumpShape, wait_idle
from bench.model import VISIBILITY_TIMEOUT_SECONDS, ModelPump
from bench.opcosts import LatencyCharge, OpCosts
from bench.report import plot_or_note
from bench.world import BenchWorld, RunTimeline
from world_aws import Runtime, RuntimeConfig, Workflows
from world_aws.contract.clock import SystemClock
from world_aws.contract.records import ResolveData, RunStatus
from world_aws.contract.world import QueueName
from world_aws.local.memory import create_memory_world

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
WORKFLOW = "bench.latency.sequential"
GATHER = "bench.latency.gather"
TARGET_ROUND_TRIPS = 1.5


class BodyClock:
    """When each step body started, by step index (the first start of each: bodies may run again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.starts: dict[int, float] = {}

    def started(self, i: int) -> None:
        now = time.perf_counter()
        with self._lock:
            self.starts.setdefault(i, now)


def latency_app(clock: BodyClock) -> Workflows:
    """``steps`` calls of a step whose body sleeps ``body_ms``, one after the other."""
    app = Workflows()

    @app.step(name="bench.latency.body")
    def body(i: int, body_ms: float) -> int:
        clock.started(i)
        time.sleep(body_ms / 1000)
        return i

    @app.workflow(name=WORKFLOW)
    async def sequential(steps: int, body_ms: float) -> int:
        for i in range(steps):
            await body(i, body_ms)
        return steps

    @app.workflow(name=GATHER)
    async def gather(steps: int, body_ms: float) -> int:
        return len(await asyncio.gather(*(body(i, body_ms) for i in range(steps))))

    return app


@dataclass(frozen=True, slots=True)
class LatencySample:
    """One model run: the gaps between consecutive body starts, less the body time, in seconds."""

    variant: str
    max_inline_steps: int
    body_ms: float
    steps: int
    overheads: list[float]
    wall_seconds: float


def op_costs(steps: int, latency: Latency, *, fan_outs: bool = False) -> OpCosts:
    """Round trips per op, from metered runs on moto: ``steps`` sequential steps, and W3 both ways.

    ``fan_outs``: also W3 in fast rounds and W3 dispatched, for the ops only a fan-out makes.
    """
    runs = [dataclasses.replace(WORKLOADS["W2"], steps=steps)]
    if fan_outs:
        runs += [WORKLOADS["W3"], WORKLOADS["W3-dispatched"]]
    with metered_moto(latency) as meters:
        run_workload(meters, dataclasses.replace(runs[0], steps=3))  # warm-up, not counted
        before = meters.moto.recorder.snapshot()
        for workload in runs:
            run_workload(meters, workload)
        return OpCosts.from_snapshot(meters.moto.recorder.snapshot() - before, runs=len(runs))


def model_run(
    costs: OpCosts,
    latency: Latency,
    *,
    steps: int,
    body_ms: float,
    max_inline_steps: int,
    timeout: float = 300,
    gather: bool = False,
    inline_fast_seconds: float | None = None,
) -> LatencySample:
    """One run of the sequential (or ``gather``) workflow on the model World; its per-step overheads."""
    clock = BodyClock()
    world = create_memory_world(clock=SystemClock(), visibility_timeout_seconds=VISIBILITY_TIMEOUT_SECONDS)
    recorder = CallRecorder(latency)
    timeline = RunTimeline()
    bench_world = BenchWorld(
        world, timeline, recorder, legacy_producer=False, charge=LatencyCharge(costs, latency)
    )
    config = dataclasses.replace(RuntimeConfig.from_env(), max_inline_steps=max_inline_steps)
    if inline_fast_seconds is not None:
        config = dataclasses.replace(config, inline_fast_seconds=inline_fast_seconds)
    runtime = Runtime(bench_world, latency_app(clock), config)
    # The step queue's consumers as deployed (its MaximumConcurrency), which dispatched branches share.
    deployed = template_functions()[QueueName.STEP].max_concurrency
    shape = PumpShape(step_workers=deployed or PumpShape().step_workers)
    pump = ModelPump(
        world.memory_queue,
        runtime.handle,
        recorder,
        latency,
        workers=shape.workers(),
        pollers=shape.pollers(),
    )
    try:
        began = time.perf_counter()
        handle = runtime.start(GATHER if gather else WORKFLOW, steps, body_ms)
        if not timeline.wait_ended(handle.run_id, timeout):
            raise RuntimeError(f"run {handle.run_id} did not end within {timeout} s")
        wall = time.perf_counter() - began
        wait_idle(recorder, pump, timeout)
        run = world.runs.get(handle.run_id, resolve_data=ResolveData.NONE)
        if run.status is not RunStatus.COMPLETED:
            raise RuntimeError(f"run {handle.run_id} ended {run.status.value}")
    finally:
        pump.stop()
        runtime.close()
        world.close()
    if gather:
        variant = "fast rounds" if config.max_inline_steps and config.inline_fast_seconds else "dispatched"
        return LatencySample(variant, max_inline_steps, body_ms, steps, [], wall)
    starts = [clock.starts[i] for i in range(steps)]
    overheads = [b - a - body_ms / 1000 for a, b in itertools.pairwise(starts)]
    variant = "inline" if max_inline_steps > 0 else "kill switch"
    return LatencySample(variant, max_inline_steps, body_ms, steps, overheads, wall)


def gather_table(samples: list[LatencySample]) -> str:
    """Per fan-out width and body time: start to end of the run, fast rounds against dispatched."""
    lines = [
        "| fan-out | body ms | fast rounds: run s (median) | dispatched: run s (median) |",
        "|---:|---:|---:|---:|",
    ]
    cells: dict[tuple[int, float], dict[str, list[float]]] = {}
    for sample in samples:
        cells.setdefault((sample.steps, sample.body_ms), {}).setdefault(sample.variant, []).append(
            sample.wall_seconds
        )
    for (width, body_ms), by in sorted(cells.items()):
        fast, sent = (statistics.median(by.get(v, [float("nan")])) for v in ("fast rounds", "dispatched"))
        lines.append(f"| {width} | {body_ms:g} | {fast:.2f} | {sent:.2f} |")
    return "\n".join(lines)


def table(samples: list[LatencySample], latency: Latency) -> str:
    """Per variant and body time: the per-step overhead in ms and in DynamoDB round trips."""
    rt = latency.dynamodb * 1000
    lines = [
        "| variant | body ms | runs | overhead p50 ms | p90 ms | mean ms | p50 in DynamoDB round trips "
        "| target |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, float], list[LatencySample]] = {}
    for sample in samples:
        groups.setdefault((sample.variant, sample.body_ms), []).append(sample)
    for (variant, body_ms), group in groups.items():
        gaps = sorted(g for s in group for g in s.overheads)
        p50, p90 = gaps[len(gaps) // 2] * 1000, gaps[int(0.9 * len(gaps))] * 1000
        mean = statistics.fmean(gaps) * 1000
        target = ""
        if variant == "inline":
            target = "met" if p50 / rt <= TARGET_ROUND_TRIPS else f"not met (≤ {TARGET_ROUND_TRIPS:g})"
        cells = [variant, f"{body_ms:g}", str(len(group)), f"{p50:.1f}", f"{p90:.1f}", f"{mean:.1f}"]
        lines.append("| " + " | ".join([*cells, f"{p50 / rt:.2f}", target]) + " |")
    return "\n".join(lines)


def plot(png: Path, samples: list[LatencySample], subtitle: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for sample in samples:
        ax.plot(
            [g * 1000 for g in sample.overheads],
            label=f"{sample.variant}, body {sample.body_ms:g} ms",
            linewidth=0.8,
        )
    ax.set_xlabel("step")
    ax.set_ylabel("overhead between bodies (ms)")
    ax.set_title("Sequential per-step overhead, model pass", fontsize=10)
    fig.suptitle(subtitle, fontsize=7, y=0.02)
    ax.legend(fontsize=7)
    fig.savefig(png, dpi=120, bbox_inches="tight")
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="sequential steps per run")
    parser.add_argument("--body-ms", default="0,20", help="step body times to run, comma separated")
    parser.add_argument("--runs", type=int, default=2, help="model runs per variant and body time")
    parser.add_argument("--max-inline", type=int, default=None, help="inline on (default: as configured)")
    parser.add_argument(
        "--no-kill-switch", action="store_true", help="skip the WORKFLOW_MAX_INLINE_STEPS=0 runs"
    )
    parser.add_argument(
        "--gather",
        default="",
        help="fan-out widths to time too, comma separated (e.g. 64,256): fast rounds against dispatched",
    )
    parser.add_argument("--gather-body-ms", default="0,200", help="body times of the fan-out runs")
    parser.add_argument("--ddb-latency-ms", type=float, default=5.0)
    parser.add_argument("--sqs-latency-ms", type=float, default=10.0)
    parser.add_argument("--s3-latency-ms", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where latency.json and latency.png go")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    latency = Latency(args.ddb_latency_ms / 1000, args.sqs_latency_ms / 1000, args.s3_latency_ms / 1000)
    command = shlex.join(["python", "-m", "bench.latency", *(sys.argv[1:] if argv is None else argv)])
    print(f"$ {command}", flush=True)
    began = time.perf_counter()
    widths = [int(w) for w in args.gather.split(",") if w.strip()]
    costs = op_costs(args.steps, latency, fan_outs=bool(widths))
    inline = args.max_inline if args.max_inline is not None else RuntimeConfig.from_env().max_inline_steps
    variants = [inline] + ([] if args.no_kill_switch or inline == 0 else [0])
    samples = [
        model_run(costs, latency, steps=args.steps, body_ms=float(body), max_inline_steps=width)
        for width in variants
        for body in args.body_ms.split(",")
        if body.strip()
        for _ in range(args.runs)
    ]
    fan_outs = [
        model_run(
            costs,
            latency,
            steps=width,
            body_ms=float(body),
            max_inline_steps=inline,
            gather=True,
            inline_fast_seconds=fast,
        )
        for width in widths
        for body in args.gather_body_ms.split(",")
        if body.strip()
        for fast in (None, 0.0)
        for _ in range(args.runs)
    ]
    elapsed = time.perf_counter() - began
    print(costs.markdown() + "\n")
    print(table(samples, latency))
    if fan_outs:
        print("\n" + gather_table(fan_outs))
    print(
        f"\n{len(samples)} model runs of {args.steps} steps in {elapsed:.0f} s (with the moto pass). "
        f"Latency per call: DynamoDB {args.ddb_latency_ms:g} ms, SQS {args.sqs_latency_ms:g} ms, "
        f"S3 {args.s3_latency_ms:g} ms. Overhead = next body's start - this body's start - body time."
    )
    args.out.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {
        "config": {
            "command": command,
            "elapsed_seconds": round(elapsed, 1),
            "latency_seconds": dataclasses.asdict(latency),
        },
        "op_costs": costs.to_json(),
        "samples": [dataclasses.asdict(s) for s in samples],
        "fan_outs": [dataclasses.asdict(s) for s in fan_outs],
    }
    path = args.out / "latency.json"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    plot_or_note(path, args.out / "latency.png", lambda png: plot(png, samples, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
