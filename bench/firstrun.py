"""A first ``world-aws run``, as a user types it: ``python -m bench.firstrun --reps 5``.

Runs the command (by default the 3-step workflow of ``tests/cli/three_steps.py`` on the
embedded default) ``--reps`` times in fresh processes: wall time, CPU time of the child's
threads (``RUSAGE_CHILDREN``: it stays near the command's cost on a shared machine) and the
run's own duration as printed; then median, minimum and the load average. Target: ≤ 3 s wall.
Figures in ``bench/out/firstrun.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "firstrun.json"
DEFAULT_COMMAND = ["run", "tests.cli.three_steps:app", "three", "--arg", "4"]
_COMPLETED = re.compile(r"^status: completed in (\d+(?:\.\d+)?)s$", re.MULTILINE)


def measure_once(command: list[str], *, world: str) -> dict[str, Any]:
    """One ``world-aws <command> --world <world>`` in a fresh process: wall, CPU, the run's duration.

    Raises:
        RuntimeError: the command did not exit 0.
    """
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    argv = [sys.executable, "-c", "from world_aws._entry import main; main()"]  # as the console script
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, *command, "--world", world], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"world-aws exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    shown = _COMPLETED.search(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "run_s": float(shown.group(1)) if shown else None,
    }


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and minimum of each measured figure over the repetitions."""
    summary: dict[str, Any] = {}
    for key in ("wall_s", "cpu_s", "run_s"):
        values = [s[key] for s in samples if s[key] is not None]
        if values:
            summary[key] = {"median": round(statistics.median(values), 3), "min": round(min(values), 3)}
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.firstrun", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--world", choices=["embedded", "memory"], default="embedded")
    parser.add_argument(
        "--command", nargs=argparse.REMAINDER, help="the world-aws arguments (default: the 3-step run)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"JSON output (default {OUT})")
    ns = parser.parse_args(argv)
    command = ns.command or DEFAULT_COMMAND
    load_before = os.getloadavg()
    samples = []
    for rep in range(ns.reps):
        sample = measure_once(command, world=ns.world)
        samples.append(sample)
        wall, cpu, run = sample["wall_s"], sample["cpu_s"], sample["run_s"]
        print(f"rep {rep + 1}: wall {wall:.2f} s, cpu {cpu:.2f} s, run {run} s")
    report: dict[str, Any] = {
        "command": ["world-aws", *command, "--world", ns.world],
        "reps": samples,
        "summary": summarise(samples),
        "load_average": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in os.getloadavg()],
        },
    }
    for key, figures in report["summary"].items():
        print(f"{key}: median {figures['median']}, min {figures['min']}")
    load = report["load_average"]
    print(f"load average (1, 5, 15 min): before {load['before']}, after {load['after']}")
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
