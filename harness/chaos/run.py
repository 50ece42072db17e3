"""Fault injection: the chaos workload under each fault group, checked run by run.

    python -m bench.chaos --runs 1000 --faults all
    python -m bench.chaos --runs 200 --faults lost --seed 7 --world aws

``--faults`` takes a group of ``harness.fault_plan.GROUPS`` (or
``all``, or ``each``: every group alone, then all together). Each configuration
runs ``--runs`` runs of ``chaos.mix`` (``harness.chaos.workload``) on a fresh
World with a ``ManualClock``: the in-memory World with faults injected at the
World protocol boundary (``FaultyWorld``), or the AWS World on moto with faults
injected by botocore hooks on its own clients (``harness.chaos.aws``). Then every
run is checked (``harness.chaos.checks``). Prints a table per configuration and
writes them all to ``bench/out/chaos.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.chaos.checks import VIOLATIONS, check_run, explain
from harness.chaos.driver import ChaosDriver
from harness.chaos.workload import Executions, chaos_app, step_prefix
from harness.fault_plan import GROUPS, FaultPlan, rates_for
from harness.faulty_world import FaultyWorld
from harness.harness import Harness, MemoryPump
from world_aws.contract.clock import ManualClock
from world_aws.contract.world import Delivery, HandlerResult, QueueName
from world_aws.errors import DeploymentGone
from world_aws.local.memory import create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import DeployedWorld
from world_aws.worker.reconciler import Reconciler

OUT = Path(__file__).parents[2] / "bench" / "out" / "chaos.json"


@dataclass(frozen=True)
class ChaosConfig:
    """One configuration: a fault group (or "all") at a size, a seed and a World."""

    faults: str
    runs: int = 40
    seed: int = 1
    world: str = "memory"
    batch: int = 20
    scale: float = 1.0
    visibility_seconds: float = 2.0
    max_sim_seconds: float = 900.0
    fanout: tuple[int, int] = (8, 24)  # the range of each run's fan-out width
    max_inline: int = RuntimeConfig().max_inline_steps  # 0: every step dispatched (the kill switch)
    # A fan-out's fast rounds (0: its steps past max_inline dispatched at once; tiny: every round
    # slow, so its held steps are dispatched beside the running bodies).
    inline_fast_seconds: float = RuntimeConfig().inline_fast_seconds
    # An inline step's lease (the default, 30 s: renewed by a live owner's thread in real time,
    # so a simulated handler that outlived it would be taken over; none does).
    inline_lease_seconds: int = RuntimeConfig().inline_lease_seconds
    # Throttling storms (memory World): every call of a delivery throttled for this long, once
    # every ``storm_every_seconds`` of simulated time from a phase drawn from the seed (0: none).
    # A delivery that raises then waits out the template's visibility timeout (900 s) and the
    # simulation runs long enough for the delivery cap to be what decides.
    storm_seconds: float = 0.0
    storm_every_seconds: float = 1800.0
    # A deploy in the middle of the first batch (memory World): an incompatible version of
    # the app (every step renamed) becomes the newest; runs in flight stay on the first.
    deploy: bool = False


@dataclass
class Setup:
    harness: Harness
    faulty: FaultyWorld
    dead_letters: Any  # () -> int: messages in both dead-letter queues


STORM_VISIBILITY_SECONDS = 900.0  # template.yaml's queues
STORM_MAX_SIM_SECONDS = 86_400.0


def storm_window(plan: FaultPlan, clock: ManualClock, seconds: float, every: float) -> Callable[[], bool]:
    """Whether a storm lasts now: ``seconds`` of every ``every``, from a phase drawn from the seed."""
    began = clock.now()
    phase = plan.uniform("storm-phase") * every

    def lasts() -> bool:
        return ((clock.now() - began).total_seconds() - phase) % every < seconds

    return lasts


@contextmanager
def memory_setup(
    plan: FaultPlan, visibility_seconds: float, storm: tuple[float, float] | None = None
) -> Iterator[Setup]:
    """The memory World behind the plan's faults; ``storm``: (seconds, every) of throttling storms."""
    clock = ManualClock()
    world = create_memory_world(clock=clock, visibility_timeout_seconds=visibility_seconds)
    faulty = FaultyWorld(world, plan)
    if storm is not None:
        faulty.storm = storm_window(plan, clock, *storm)
    try:
        yield Setup(
            Harness("memory", faulty, clock, MemoryPump(world)),
            faulty,
            lambda: sum(len(world.memory_queue.dead_letters(q)) for q in QueueName),
        )
    finally:
        world.close()


def run_configuration(config: ChaosConfig, plan: FaultPlan | None = None) -> dict[str, Any]:
    """Run ``config`` and check every run; returns its row (counts, rates, examples).

    ``plan`` replaces the configuration's seeded rates (``tests/faults/test_crash_points.py``
    fires one fault at one chosen call).
    """
    if plan is None:
        plan = FaultPlan(config.seed, rates_for([config.faults], config.scale))
    executions = Executions()
    app = chaos_app(executions, plan)
    if config.world == "aws":
        from harness.chaos.aws import aws_setup

        setup_cm = aws_setup(plan, config.visibility_seconds)
    elif config.storm_seconds > 0:
        storm = (config.storm_seconds, config.storm_every_seconds)
        setup_cm = memory_setup(plan, STORM_VISIBILITY_SECONDS, storm)
    else:
        setup_cm = memory_setup(plan, config.visibility_seconds)
    stormy = config.storm_seconds > 0
    began = time.perf_counter()
    with setup_cm as setup:
        runtime_config = RuntimeConfig(
            max_inline_steps=config.max_inline,
            inline_lease_seconds=config.inline_lease_seconds,
            inline_fast_seconds=config.inline_fast_seconds,
        )
        deployments = ChaosDeployments() if config.deploy else None
        world = DeployedWorld(setup.faulty, FIRST_DEPLOYMENT) if deployments else setup.faulty
        runtime = setup.harness.runtime_for(app, runtime_config, world=world, handover=deployments)
        copies = Runtime(world, app, runtime_config, handover=deployments)
        if deployments is not None:
            deployments.add(FIRST_DEPLOYMENT, runtime)
        driver = ChaosDriver(
            setup.harness,
            setup.faulty,
            runtime,
            copies,
            visibility_seconds=STORM_VISIBILITY_SECONDS if stormy else config.visibility_seconds,
            max_sim_seconds=STORM_MAX_SIM_SECONDS if stormy else config.max_sim_seconds,
            fanout=config.fanout,
        )
        if deployments is not None:
            driver.reconciler = Reconciler(DeployedWorld(setup.faulty.inner, FIRST_DEPLOYMENT))
            driver.deployments = (
                deployments,
                lambda: _deploy(setup, deployments, executions, plan, runtime_config),
            )
        callers = []
        try:
            for first in range(0, config.runs, config.batch):
                callers += driver.run_batch(range(first, min(config.runs, first + config.batch)))
                setup.harness.deliveries.clear()
        finally:
            copies.close()
            setup.harness.close()
        violations: Counter[str] = Counter()
        examples: dict[str, list[str]] = {}
        details: dict[str, list[str]] = {}
        for caller in callers:
            if deployments is not None:
                caller.step_prefix = step_prefix(1 if caller.deployment == FIRST_DEPLOYMENT else 2)
            found = check_run(setup.faulty.inner, app.serializer, caller)
            if found and len(details) < 5:
                details[caller.run_id] = explain(setup.faulty.inner, caller.run_id, plan.journal)
            for kind in sorted({kind for kind, _ in found}):
                violations[kind] += 1
            for kind, detail in found:
                kept = examples.setdefault(kind, [])
                if len(kept) < 3:
                    kept.append(f"{caller.run_id} #{caller.spec['index']} ({caller.spec['mode']}): {detail}")
        dead = setup.dead_letters()
    if dead:
        violations["dead_letter"] = dead
    if driver.errors.count:
        violations["handler_error"] = driver.errors.count
        examples["handler_error"] = driver.errors.examples
    total, extra, same_attempt = executions.duplicates()
    return {
        "config": asdict(config),
        "runs": len(callers),
        "stuck": violations["stuck"],
        # Woken by the reconciler after their batch went quiet: late, not lost (their own ids).
        "reconciled": len(set(driver.reconciled)),
        "reconciled_runs": sorted(set(driver.reconciled))[:10],
        "reconciled_details": driver.reconciled_details,  # how the reconciler found them
        "violations": {kind: violations[kind] for kind in VIOLATIONS if kind != "stuck"},
        "examples": examples,
        "broken_runs": details,  # each one's last events and the faults fired on it
        "body_executions": total,
        "duplicate_executions": extra,
        "duplicate_rate": round(extra / total, 4) if total else 0.0,
        "same_attempt_executions": same_attempt,
        "faults_fired": {str(k): v for k, v in sorted(plan.fired.items())},
        "deliveries": driver.deliveries,
        "copy_timeouts": setup.faulty.copy_timeouts,
        "wall_seconds": round(time.perf_counter() - began, 1),
    }


FIRST_DEPLOYMENT = "dpl_chaos_1"
SECOND_DEPLOYMENT = "dpl_chaos_2"


class ChaosDeployments:
    """The deployments of a chaos run with a deploy (``Handover``): a runtime per deployment id."""

    def __init__(self) -> None:
        self.runtimes: dict[str, Runtime] = {}

    def add(self, deployment_id: str, runtime: Runtime) -> None:
        self.runtimes[deployment_id] = runtime

    def hand_over(self, deployment_id: str, delivery: Delivery) -> HandlerResult:
        runtime = self.runtimes.get(deployment_id)
        if runtime is None:
            raise DeploymentGone(f"no deployment {deployment_id!r}")
        return runtime.handle(delivery)


def _deploy(
    setup: Setup,
    deployments: ChaosDeployments,
    executions: Executions,
    plan: FaultPlan,
    config: RuntimeConfig,
) -> tuple[Runtime, Runtime]:
    """Deploy version 2 of the workload: its runtime (now the harness's) and its copies' runtime."""
    world = DeployedWorld(setup.faulty, SECOND_DEPLOYMENT)
    app = chaos_app(executions, plan, version=2)
    runtime = setup.harness.runtime_for(app, config, world=world, handover=deployments)
    deployments.add(SECOND_DEPLOYMENT, runtime)
    return runtime, Runtime(world, app, config, handover=deployments)


def table(rows: list[dict[str, Any]]) -> str:
    """A markdown table: one line per configuration, a column per violation kind."""
    kinds = [k for k in VIOLATIONS if k != "stuck"]
    head = ["world", "faults", "runs", "seed", "stuck", *kinds, "reconciled", "dup. bodies", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        config = row["config"]
        cells = [config["world"], config["faults"], row["runs"], config["seed"], row["stuck"]]
        cells += [row["violations"][k] for k in kinds]
        cells += [row["reconciled"], f"{100 * row['duplicate_rate']:.2f}%", row["wall_seconds"]]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--faults", default="each", help=f"{', '.join(GROUPS)}, all or each")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--world", choices=("memory", "aws"), default="memory")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every fault rate")
    parser.add_argument("--max-fanout", type=int, default=24, help="widest fan-out (narrowest: 8)")
    parser.add_argument(
        "--max-inline", type=int, default=RuntimeConfig().max_inline_steps, help="WORKFLOW_MAX_INLINE_STEPS"
    )
    parser.add_argument(
        "--inline-fast-seconds",
        type=float,
        default=RuntimeConfig().inline_fast_seconds,
        help="WORKFLOW_INLINE_FAST_SECONDS (0: no fast rounds; tiny: every round slow)",
    )
    parser.add_argument(
        "--storm-seconds",
        type=float,
        default=0.0,
        help="throttle every call of a delivery this long (memory World; 0: no storms)",
    )
    parser.add_argument("--storm-every-seconds", type=float, default=1800.0, help="one storm per this long")
    parser.add_argument(
        "--deploy",
        action="store_true",
        help="deploy an incompatible version of the app in the middle of the first batch",
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    logging.disable(logging.ERROR)  # the runtime logs every injected failure it survives
    groups = [*GROUPS, "all"] if args.faults == "each" else [args.faults]
    rows = []
    for group in groups:
        fanout = (min(8, args.max_fanout), args.max_fanout)
        config = ChaosConfig(
            group,
            args.runs,
            args.seed,
            args.world,
            scale=args.scale,
            fanout=fanout,
            max_inline=args.max_inline,
            inline_fast_seconds=args.inline_fast_seconds,
            storm_seconds=args.storm_seconds,
            storm_every_seconds=args.storm_every_seconds,
            deploy=args.deploy,
        )
        row = run_configuration(config)
        rows.append(row)
        print(table([row]).splitlines()[-1] if len(rows) > 1 else table([row]), flush=True)
        for kind, kept in row["examples"].items():
            for example in kept[:2]:
                print(f"    {kind}: {example.splitlines()[0][:300]}")
    print()
    print(table(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))
    print(f"\nwrote {args.out}")
    return 1 if any(r["stuck"] or any(r["violations"].values()) for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
