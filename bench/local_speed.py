"""Local speed on the memory World, the figures issue 44 compares with the peers' local runners.

``python -m bench.local_speed --reps 5``: each workload (no steps, 3 and 100 sequential
steps, a 64- and a 256-way fan-out) runs ``--reps`` times, each in a fresh process on
``local_stack(app, kind="memory")``. Per run: the time from ``start()`` to ``result()``
returning, the per-step overhead (that time over the step count, bodies do nothing) and
the result's lag: from the moment the World recorded the run's end (``World.ends``) to
``result()`` returning. Medians land in ``bench/out/local_speed.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "local_speed.json"
WORKLOADS = {"no steps": ("w2", 0), "3 sequential": ("w2", 3), "100 sequential": ("w2", 100),
             "64 fan-out": ("w4", 64), "256 fan-out": ("w4", 256)}  # fmt: skip


def one(workload: str) -> dict[str, float]:
    """One run of ``workload`` in this process: start to result, and the result's lag after the end."""
    from bench.apps import app
    from world_aws.local.stack import local_stack

    name, steps = WORKLOADS[workload]
    with local_stack(app, kind="memory") as stack:
        ended: list[float] = []
        notify = stack.world.ends.notify
        stack.world.ends.notify = lambda run_id: (ended.append(time.perf_counter()), notify(run_id))[1]  # type: ignore[method-assign]
        started = time.perf_counter()
        assert stack.runtime.start(name, steps).result(timeout=120) == steps
        returned = time.perf_counter()
    return {"run_ms": (returned - started) * 1000, "lag_ms": (returned - ended[-1]) * 1000, "steps": steps}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_speed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--one", choices=list(WORKLOADS), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT)
    ns = parser.parse_args(argv)
    if ns.one:
        print(json.dumps(one(ns.one)))
        return 0
    rows: dict[str, Any] = {}
    print(f"{'workload':<16} {'start→result ms':>16} {'per step ms':>12} {'result lag ms':>14}")
    for workload in WORKLOADS:
        samples = []
        for _ in range(ns.reps):
            done = subprocess.run([sys.executable, "-m", "bench.local_speed", "--one", workload],
                                  cwd=ROOT, capture_output=True, text=True, check=True)  # fmt: skip
            samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
        run_ms = statistics.median(s["run_ms"] for s in samples)
        lag_ms = statistics.median(s["lag_ms"] for s in samples)
        steps = samples[0]["steps"]
        per_step = run_ms / steps if steps else None
        rows[workload] = {"run_ms": round(run_ms, 2), "per_step_ms": per_step and round(per_step, 3),
                          "lag_ms": round(lag_ms, 3)}  # fmt: skip
        shown = f"{per_step:.3f}" if per_step else "-"
        print(f"{workload:<16} {run_ms:>16.2f} {shown:>12} {lag_ms:>14.3f}")
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps({"reps": ns.reps, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
