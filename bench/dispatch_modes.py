"""Batched appends against parallel create + publish, timed: ``python -m bench.dispatch_modes``.

A fan-out's steps, dispatched by message (inline execution off, the path contract §5.2 is
about), in the two ways a pass that writes nothing but step creates can make them:

* batched (``WORKFLOW_BATCHED_STEP_DISPATCH``, the default): the creates in appends of ten
  (``rules.MAX_BATCH_EVENTS``), one after the other, then every message in parallel;
* parallel (``0``): every ``step_created`` and every message at once, on the pass's
  dispatch threads (16).

Measured in the latency model (``bench.model``, as ``bench.fanout``'s model pass and
``bench.latency``): the in-memory World, each operation sleeping its round trips measured
on moto (``bench.latency.op_costs``, W2 and W3 both ways) times the service latency
(DynamoDB 5 ms, SQS 10 ms), consumed by a pump that pays Lambda's event-source round trips.
Held mode: every branch waits until all have started (as many step consumers as branches),
so the times are the start path's alone. Per width and mode, the medians over ``--runs`` of
the time from ``start()`` to the first branch's ``step_started`` and to the last one's.
``--doc docs/benchmarks.md`` writes the table there.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.instrument import Latency
from bench.latency import op_costs
from bench.measure import PumpShape, Variant
from bench.model import ModelBench
from bench.recovery import write_doc

OUT = Path(__file__).resolve().parent / "out" / "dispatch_modes.json"
MODES = {"batched": Variant("run_context", "resilient"), "parallel": Variant("run_context", "parallel")}


def measure(widths: list[int], runs: int, latency: Latency) -> dict[str, Any]:
    """Medians of time to first and to last start, per width and mode (modes interleaved run by run)."""
    print("op costs: W2 (10 steps) and W3 both ways on moto ...", flush=True)
    costs = op_costs(10, latency, fan_outs=True)
    print("model runs ...", flush=True)
    bench = ModelBench(costs, latency, PumpShape())
    bench.run_once(4, MODES["batched"], held=True)  # warm-up, not recorded
    rows = []
    for n in widths:
        samples: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
        for i in range(runs):
            order = list(MODES) if i % 2 == 0 else list(reversed(MODES))
            for mode in order:
                sample = bench.run_once(n, MODES[mode], held=True)
                samples[mode].append((sample.ttfs_seconds, sample.ttls_seconds))
        for mode, taken in samples.items():
            rows.append(
                {
                    "n": n,
                    "mode": mode,
                    "first_start_p50": round(statistics.median(t[0] for t in taken), 3),
                    "last_start_p50": round(statistics.median(t[1] for t in taken), 3),
                    "samples": [[round(a, 4), round(b, 4)] for a, b in taken],
                }
            )
        print(table(rows[-2:], header=n == widths[0]), flush=True)
    return {"runs": runs, "latency_ms": {"dynamodb": 5, "sqs": 10}, "rows": rows}


def table(rows: list[dict[str, Any]], *, header: bool = True) -> str:
    head = ["branches", "dispatch", "to the first step's start (p50)", "to the last branch's start (p50)"]
    lines = ["| " + " | ".join(head) + " |", "|---:|---|---:|---:|"] if header else []
    for row in rows:
        first, last = row["first_start_p50"], row["last_start_p50"]
        lines.append(f"| {row['n']} | {row['mode']} | {_ms(first)} | {_ms(last)} |")
    return "\n".join(lines)


def _ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.dispatch_modes", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--widths", default="16,64,256")
    parser.add_argument("--runs", type=int, default=3, help="runs per width and mode (medians)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    widths = [int(w) for w in args.widths.split(",") if w]
    result = measure(widths, args.runs, Latency(dynamodb=0.005, sqs=0.010, s3=0.010))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if args.doc is not None:
        text = table(result["rows"]) + (
            f"\n\n`python -m bench.dispatch_modes --widths {args.widths} --runs {args.runs}` (latency model, "
            "DynamoDB 5 ms and SQS 10 ms a round trip, held mode: as many step consumers as branches)."
        )
        write_doc(args.doc, "bench.dispatch_modes", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
