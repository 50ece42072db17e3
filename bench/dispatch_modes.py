"""Batched appends against parallel create + publish, timed: ``python -m bench.dispatch_modes``.

A fan-out's steps dispatched by message (inline execution off, contract §5.2), two ways:
batched (``WORKFLOW_BATCHED_STEP_DISPATCH``, the default: creates in appends of ten, then every
message in parallel) and parallel (``0``: every ``step_created`` and message at once on the
pass's dispatch threads). Backends (``--backends``), modes interleaved run by run: ``model``
(``bench.model``, op costs from W2 and W3 on moto, DynamoDB 5 ms and SQS 10 ms) and
``embedded`` (``FanoutBench(embedded=True)``: the embedded stack's moto over loopback HTTP,
no latency injected). Held mode: every branch waits until all started. Per backend, width and
mode: the medians of start to the first and to the last ``step_started``. ``--doc`` writes the
table into docs/benchmarks.md.
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

from bench.core import FanoutBench
from bench.instrument import Latency
from bench.latency import op_costs
from bench.measure import Bench, PumpShape, Variant
from bench.model import ModelBench
from bench.recovery import write_doc

OUT = Path(__file__).resolve().parent / "out" / "dispatch_modes.json"
MODES = {"batched": Variant("run_context", "resilient"), "parallel": Variant("run_context", "parallel")}


def model_bench(latency: Latency) -> ModelBench:
    """The latency model, its op costs measured on moto first."""
    print("op costs: W2 (10 steps) and W3 both ways on moto ...", flush=True)
    costs = op_costs(10, latency, fan_outs=True)
    return ModelBench(costs, latency, PumpShape())


def measure(bench: Bench, backend: str, widths: list[int], runs: int) -> list[dict[str, Any]]:
    """Medians of time to first and to last start, per width and mode (modes interleaved run by run)."""
    print(f"{backend} runs ...", flush=True)
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
                    "backend": backend,
                    "n": n,
                    "mode": mode,
                    "first_start_p50": round(statistics.median(t[0] for t in taken), 3),
                    "last_start_p50": round(statistics.median(t[1] for t in taken), 3),
                    "samples": [[round(a, 4), round(b, 4)] for a, b in taken],
                }
            )
        print(table(rows[-2:], header=n == widths[0]), flush=True)
    return rows


def table(rows: list[dict[str, Any]], *, header: bool = True) -> str:
    head = [
        "backend",
        "branches",
        "dispatch",
        "to the first step's start (p50)",
        "to the last branch's start (p50)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|---:|---|---:|---:|"] if header else []
    for row in rows:
        first, last = row["first_start_p50"], row["last_start_p50"]
        lines.append(f"| {row['backend']} | {row['n']} | {row['mode']} | {_ms(first)} | {_ms(last)} |")
    return "\n".join(lines)


def faster(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Per mode, in how many (backend, width, measure) comparisons it was the faster one."""
    wins = dict.fromkeys(MODES, 0)
    pairs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for row in rows:
        pairs.setdefault((row["backend"], row["n"]), {})[row["mode"]] = row
    for pair in pairs.values():
        for measure_name in ("first_start_p50", "last_start_p50"):
            best = min(pair, key=lambda mode: pair[mode][measure_name])
            wins[best] += 1
    return wins


def _ms(seconds: float) -> str:
    return "n/a" if math.isnan(seconds) else f"{seconds * 1000:.0f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.dispatch_modes", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--widths", default="16,64,256")
    parser.add_argument("--runs", type=int, default=5, help="runs per width, mode and backend (medians)")
    parser.add_argument("--backends", default="model,embedded", help="model, embedded or both")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    widths = [int(w) for w in args.widths.split(",") if w]
    backends = [b for b in args.backends.split(",") if b]
    latency = Latency(dynamodb=0.005, sqs=0.010, s3=0.010)
    rows: list[dict[str, Any]] = []
    for backend in backends:
        if backend == "model":
            rows += measure(model_bench(latency), backend, widths, args.runs)
        elif backend == "embedded":
            with FanoutBench(embedded=True) as embedded:
                rows += measure(embedded, backend, widths, args.runs)
        else:
            parser.error(f"unknown backend {backend!r} (model or embedded)")
    wins = faster(rows)
    result = {"runs": args.runs, "latency_ms": {"dynamodb": 5, "sqs": 10}, "rows": rows, "faster": wins}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"faster (comparisons won): {wins}")
    if args.doc is not None:
        text = table(rows) + (
            f"\n\nFaster in {wins['batched']} of {sum(wins.values())} comparisons: batched; "
            f"in {wins['parallel']}: parallel (first and last start, per backend and width). "
            f"`python -m bench.dispatch_modes --widths {args.widths} --runs {args.runs} "
            f"--backends {args.backends}` (medians of {args.runs} runs per cell, modes interleaved; "
            "model: the latency model, DynamoDB 5 ms and SQS 10 ms a round trip; embedded: the AWS "
            "World on the embedded stack's moto over loopback HTTP, no latency injected; held mode: "
            "as many step consumers as branches)."
        )
        write_doc(args.doc, "bench.dispatch_modes", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
