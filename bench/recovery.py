"""Crash recovery, measured: ``python -m bench.recovery --runs 100``.

On the embedded stack with the template's heartbeat settings, per round: a consumer process
(this module with ``--consume``, as a Lambda container runs it) starts; ``--per-round`` runs
are started over one heartbeat period, each with a first inline step whose body never returns
there; once every body runs, the consumer gets SIGKILL; a fresh consumer here finishes the
runs, and each run's time from the kill to its completion is taken. The heartbeat bounds it:
the killed invocation's messages reappear within 1.5 periods of its last beat and the
redelivered message takes the inline step over. Target: p99 within 2 periods. ``--doc``
writes the table between the page's ``bench.recovery`` markers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from world_aws import Workflows

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "recovery.json"
VICTIM = "BENCH_RECOVERY_VICTIM_DIR"
READY = "consumer ready"

app = Workflows()


@app.step(name="bench.recovery.slow")
def slow(i: int) -> int:
    """Returns at once, except in the consumer to be killed: there it marks a file and hangs."""
    marks = os.environ.get(VICTIM)
    if marks:
        Path(marks, str(i)).touch()
        time.sleep(3600)
    return i


@app.step(name="bench.recovery.after")
def after(i: int) -> int:
    return i + 1


@app.workflow
async def crashy(i: int) -> int:
    """Two sequential steps; the first is where the consumer dies."""
    return await after(await slow(i))


def _template_settings() -> dict[str, str]:
    """The functions' environment and the workflow queue's event source, from ``template.yaml``."""
    from world_aws.aws.infra.template import load_template

    template = load_template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    mapping = template["Resources"]["WorkflowFunction"]["Properties"]["Events"]
    (event,) = (e["Properties"] for e in mapping.values() if e["Type"] == "SQS")
    return {
        "WORKFLOW_HEARTBEAT_SECONDS": str(variables["WORKFLOW_HEARTBEAT_SECONDS"]),
        "WORKFLOW_QUEUE_VISIBILITY_SECONDS": str(variables["WORKFLOW_QUEUE_VISIBILITY_SECONDS"]),
        "WORKFLOW_MAX_INLINE_STEPS": str(variables["WORKFLOW_MAX_INLINE_STEPS"]),
        "BATCH_SIZE": str(event["BatchSize"]),
        "MAX_CONCURRENCY": str(event["ScalingConfig"]["MaximumConcurrency"]),
    }


def _event_source(world: Any, handler: Any, settings: dict[str, str]) -> Any:
    from world_aws.aws.queue.event_source import EventSourceOptions, LocalEventSource

    options = EventSourceOptions(
        batch_size=int(settings["BATCH_SIZE"]), max_concurrency=int(settings["MAX_CONCURRENCY"])
    )
    return LocalEventSource(
        world.clients.sqs, world.queue_urls(), handler, options, heartbeat=world.config.heartbeat
    )


def _runtime(env: dict[str, str], clients: Any = None) -> tuple[Any, Any]:
    from world_aws.aws.config import AwsConfig
    from world_aws.aws.world import create_aws_world
    from world_aws.runtime.runtime import Runtime
    from world_aws.worker.config import RuntimeConfig

    world = create_aws_world(AwsConfig.from_env(env), clients=clients)
    return world, Runtime(world, app, replace(RuntimeConfig.from_env(env), replay_cache_runs=0))


def consume() -> None:
    """The consumer to be killed: runs until SIGKILL."""
    world, runtime = _runtime(dict(os.environ))
    _event_source(world, runtime.handle, _template_settings())
    print(READY, flush=True)
    while True:
        time.sleep(3600)


def _round(
    index: int, per_round: int, aws: Any, env: dict[str, str], settings: dict[str, str], rng: random.Random
) -> list[float]:
    heartbeat = float(settings["WORKFLOW_HEARTBEAT_SECONDS"])
    world, runtime = _runtime(env, aws.clients)
    with tempfile.TemporaryDirectory(prefix="recovery-") as marks:
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.recovery", "--consume"],
            env={**os.environ, **env, VICTIM: marks},
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            if child.stdout.readline().strip() != READY:
                raise RuntimeError("the consumer process did not start")
            runs = []
            for i in range(per_round):
                # Spread over one period: the kill meets each invocation at another phase of its beat.
                time.sleep(rng.uniform(0, heartbeat / per_round))
                runs.append(runtime.start(crashy, index * per_round + i).run_id)
            deadline = time.monotonic() + 120
            while len(os.listdir(marks)) < per_round:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {len(os.listdir(marks))} of {per_round} bodies started")
                time.sleep(0.01)
            child.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            child.wait()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    source = _event_source(world, runtime.handle, settings)
    took: dict[str, float] = {}
    limit = killed + 20 * heartbeat + 60
    try:
        while len(took) < len(runs) and time.monotonic() < limit:
            for run_id in runs:
                if run_id not in took:
                    run = world.runs.get(run_id)
                    if run.status.terminal:
                        if run.status.value != "completed":
                            raise RuntimeError(f"run {run_id} ended {run.status.value}")
                        took[run_id] = time.monotonic() - killed
            time.sleep(0.02)
    finally:
        source.stop()
        runtime.close()
        world.close()
    return [took.get(run_id, math.inf) for run_id in runs]


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def measure(runs: int, per_round: int, seed: int) -> dict[str, Any]:
    """``runs`` kills mid-step, ``per_round`` at a time; the times from kill to completion."""
    from world_aws.local.embedded import EmbeddedAws

    settings = _template_settings()
    rng = random.Random(seed)
    times: list[float] = []
    started = time.monotonic()
    with EmbeddedAws(apply_settings=False, name_prefix="bench-recovery") as aws:
        env = {**aws.env(), **{k: v for k, v in settings.items() if k.startswith("WORKFLOW_")}}
        rounds = math.ceil(runs / per_round)
        for index in range(rounds):
            size = min(per_round, runs - index * per_round)
            times += _round(index, size, aws, env, settings, rng)
            print(f"round {index + 1}/{rounds}: {', '.join(f'{t:.1f}' for t in times[-size:])} s", flush=True)
    heartbeat = float(settings["WORKFLOW_HEARTBEAT_SECONDS"])
    finite = [t for t in times if math.isfinite(t)]
    return {
        "runs": runs,
        "seed": seed,
        "settings": settings,
        "visibility_per_beat_seconds": max(1, math.ceil(1.5 * heartbeat)),
        "recovered": len(finite),
        "p50_seconds": round(statistics.median(times), 2),
        "p99_seconds": round(_quantile(times, 0.99), 2),
        "max_seconds": round(max(times), 2),
        "target_seconds": 2 * heartbeat,
        "met": _quantile(times, 0.99) <= 2 * heartbeat,
        "bench_seconds": round(time.monotonic() - started, 1),
        "times": [round(t, 3) for t in times],
    }


def markdown(result: dict[str, Any]) -> str:
    """The benchmark page's table for ``result``."""
    s = result["settings"]
    return "\n".join(
        [
            "| heartbeat | hidden per beat | queue visibility | kills | recovered | p50 | p99 | max "
            "| target (2 beats) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {s['WORKFLOW_HEARTBEAT_SECONDS']} s | {result['visibility_per_beat_seconds']} s "
            f"| {s['WORKFLOW_QUEUE_VISIBILITY_SECONDS']} s | {result['runs']} | {result['recovered']} "
            f"| {result['p50_seconds']} s | {result['p99_seconds']} s | {result['max_seconds']} s "
            f"| {result['target_seconds']:g} s {'(met)' if result['met'] else '(missed)'} |",
            "",
            f"`python -m bench.recovery --runs {result['runs']} --seed {result['seed']}` "
            f"(SIGKILL of the consumer process mid-step, time from the kill to the run's completion).",
        ]
    )


def write_doc(path: Path, name: str, table: str) -> None:
    """Put ``table`` between ``<!-- name -->`` and ``<!-- /name -->`` in ``path`` (appended if absent)."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    block = f"{begin}\n{table}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + f"\n\n{block}\n"
    path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="kills mid-step (default 100)")
    parser.add_argument(
        "--per-round", type=int, default=10, help="runs killed at once per round (default 10)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/benchmarks.md)")
    parser.add_argument("--consume", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.consume:
        consume()
        return 0
    if args.runs < 1 or args.per_round < 1:
        parser.error("--runs and --per-round must be at least 1")
    result = measure(args.runs, args.per_round, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    print(table)
    if args.doc is not None:
        write_doc(args.doc, "bench.recovery", table)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
