"""Step-dispatch benchmark (contract §5): what an N-branch fan-out costs and how fast it starts.

For each N and variant (prologue ``run_context`` or ``legacy`` x dispatch ``resilient`` or
``sequential``) it runs ``asyncio.gather`` of N steps, variants interleaved round by round in
alternating order, on two backends: moto (the AWS World on in-process moto with an injected
latency per call: calls per step, run reads before the claim, TTLS = start to the last
``step_started``, and each World op's round trips) and the model (``bench.model``: the memory
World, each op sleeping its moto round trips; modeled round trips, delivery to claim, TTLS).
Modes: held (every step waits until all N started: the start path alone) and full (trivial
steps, ``--workers`` consumers, the whole run). Writes the tables to stdout,
``bench/out/fanout.json`` and ``fanout.png``; ``--model-only`` reuses the moto samples of
``--op-costs``.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.core import FanoutBench
from bench.instrument import Latency
from bench.measure import Bench, PumpShape, RunSample, Variant, all_variants
from bench.model import ModelBench
from bench.opcosts import OpCosts
from bench.report import (
    Paired,
    Row,
    markdown_table,
    model_table,
    paired_prologues,
    paired_table,
    plot,
    plot_or_note,
    samples_from_json,
    summarise,
    write_json,
)

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
_WARM_UP = Variant("run_context", "resilient")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N in 1, 16; 2 runs; full passes at 1, 16")
    parser.add_argument("--ns", default="1,16,64,256", help="branch counts of the held (TTLS) passes")
    parser.add_argument("--runs", type=int, default=5, help="runs per N and variant (moto held pass)")
    parser.add_argument(
        "--runs-256", type=int, default=5, help="runs per variant for N >= 256 (moto held pass; each ~25 s)"
    )
    parser.add_argument(
        "--full-ns",
        default="1,16,64,256",
        help="branch counts of the full passes, one moto run each ('' to skip)",
    )
    parser.add_argument(
        "--model-runs", type=int, default=5, help="model runs per N and variant (0: no model)"
    )
    parser.add_argument(
        "--model-only", action="store_true", help="skip the moto passes (costs from --op-costs)"
    )
    parser.add_argument(
        "--op-costs",
        type=Path,
        default=DEFAULT_OUT / "fanout.json",
        help="a fanout.json with op costs, for --model-only",
    )
    parser.add_argument("--ddb-latency-ms", type=float, default=5.0)
    parser.add_argument("--sqs-latency-ms", type=float, default=10.0)
    parser.add_argument("--s3-latency-ms", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=16, help="step consumers in the full passes")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where fanout.json and fanout.png go")
    args = parser.parse_args(argv)
    if args.quick:
        args.ns, args.runs, args.runs_256, args.full_ns, args.model_runs = "1,16", 2, 2, "1,16", 2
    return args


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    held_ns, full_ns = _ints(args.ns), _ints(args.full_ns)
    latency = Latency(
        dynamodb=args.ddb_latency_ms / 1000, sqs=args.sqs_latency_ms / 1000, s3=args.s3_latency_ms / 1000
    )
    shape = PumpShape(step_workers=args.workers)
    runs_for = {n: (args.runs_256 if n >= 256 else args.runs) for n in held_ns}
    command = shlex.join(["python", "-m", "bench.fanout", *(sys.argv[1:] if argv is None else argv)])
    print(f"$ {command}")
    print(
        f"latency per call: DynamoDB {args.ddb_latency_ms:g} ms, SQS {args.sqs_latency_ms:g} ms, "
        f"S3 {args.s3_latency_ms:g} ms; held N={held_ns}, full N={full_ns} ({args.workers} step consumers); "
        + ("model only" if args.model_only else f"moto held runs {runs_for}, 1 full run each")
        + f"; model runs {args.model_runs} per N",
        flush=True,
    )
    began = time.perf_counter()
    config: dict[str, Any] = {
        "command": command,
        "latency_ms": {"dynamodb": args.ddb_latency_ms, "sqs": args.sqs_latency_ms, "s3": args.s3_latency_ms},
        "step_workers_full": args.workers,
    }
    if args.model_only:
        loaded = _previous_moto(args.op_costs)
        if loaded is None:
            print(f"{args.op_costs} has no op costs: run the moto passes first (without --model-only)")
            return 2
        costs, moto, config["moto"] = loaded
    else:
        moto = _moto_passes(latency, shape, held_ns, full_ns, runs_for)
        costs = OpCosts.from_samples(moto)
        runs = {str(n): r for n, r in runs_for.items()}
        config["moto"] = {"held_ns": held_ns, "runs": runs, "full_ns": full_ns}
    moto_seconds = time.perf_counter() - began
    model: list[RunSample] = []
    unmeasured: list[str] = []
    if args.model_runs > 0:
        model, unmeasured = _model_pass(costs, latency, shape, held_ns, full_ns, args.model_runs)
        config["model"] = {"held_ns": held_ns, "full_ns": full_ns, "runs": args.model_runs}
    elapsed = time.perf_counter() - began
    config["elapsed_seconds"] = round(elapsed, 1)
    samples = moto + model
    rows = summarise(samples)
    pairs = paired_prologues(samples)
    print_tables(costs, rows, pairs, show_moto=not args.model_only)
    source = str(args.op_costs) if args.model_only else f"this command's moto passes ({moto_seconds:.0f} s)"
    print(
        f"\n{len(samples)} runs ({len(model)} model) in {elapsed:.0f} s. Calls and round trips are per "
        "step; moto receives count only those that brought messages; times in seconds. "
        f"Op costs from {source}, {costs.runs} runs."
        + (f" Ops never measured, charged nothing: {', '.join(unmeasured)}." if unmeasured else "")
    )
    write_json(args.out / "fanout.json", config, samples, rows, pairs, costs.to_json())
    subtitle = (
        f"latency DynamoDB {args.ddb_latency_ms:g} ms, SQS {args.sqs_latency_ms:g} ms, "
        f"S3 {args.s3_latency_ms:g} ms; {command}"
    )
    plot_or_note(args.out / "fanout.json", args.out / "fanout.png", lambda png: plot(png, rows, subtitle))
    return 0


def _moto_passes(
    latency: Latency, shape: PumpShape, held_ns: list[int], full_ns: list[int], runs_for: dict[int, int]
) -> list[RunSample]:
    """The held and full passes on moto (full: one run per N and variant)."""
    with FanoutBench(latency, shape) as bench:
        bench.run_once(4, _WARM_UP)  # warm-up, not recorded
        held = interleaved(bench, held_ns, runs_for, held=True)
        return held + interleaved(bench, full_ns, dict.fromkeys(full_ns, 1), held=False)


def _previous_moto(path: Path) -> tuple[OpCosts, list[RunSample], dict[str, Any]] | None:
    """Op costs, moto samples and moto settings of an earlier run's document; None without op costs."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if not document.get("op_costs"):
        return None
    previous = document.get("config", {})
    # A document of this version keeps the moto settings under "moto"; an older one's are its config.
    settings = {**previous.get("moto", previous), "from": str(path)}
    moto = [s for s in samples_from_json(document) if s.backend == "moto"]
    return OpCosts.from_json(document["op_costs"]), moto, settings


def _model_pass(
    costs: OpCosts, latency: Latency, shape: PumpShape, held_ns: list[int], full_ns: list[int], runs: int
) -> tuple[list[RunSample], list[str]]:
    """The held and full passes on the model; also the ops it met that the costs do not know."""
    bench = ModelBench(costs, latency, shape)
    bench.run_once(4, _WARM_UP)  # warm-up, not recorded
    held = interleaved(bench, held_ns, dict.fromkeys(held_ns, runs), held=True)
    full = interleaved(bench, full_ns, dict.fromkeys(full_ns, runs), held=False)
    return held + full, bench.charge.unmeasured


# ---------------------------------------------------------------- passes, round by round


def interleaved(bench: Bench, ns: Sequence[int], runs: Mapping[int, int], *, held: bool) -> list[RunSample]:
    """``runs[n]`` rounds of every variant at each ``n``, the order alternating round by round."""
    variants = all_variants()
    samples = []
    for n in ns:
        for run in range(runs[n]):
            for variant in variants if run % 2 == 0 else variants[::-1]:
                sample = bench.run_once(n, variant, held=held)
                _progress(sample, run)
                samples.append(sample)
    return samples


def _progress(sample: RunSample, run: int) -> None:
    mode = "held" if sample.held else "full"
    print(
        f"  {sample.backend:<5} {mode} N={sample.n:<3} {sample.variant.label:<26} run {run + 1}: "
        f"TTLS {sample.ttls_seconds:6.3f} s, run reads before claim {sample.pre_claim_run_reads}, "
        f"{sample.run_status}, {sample.wall_seconds:.1f} s",
        flush=True,
    )


def print_tables(costs: OpCosts, rows: Sequence[Row], pairs: Sequence[Paired], *, show_moto: bool) -> None:
    """The op costs, then the moto tables (if ``show_moto``), then the model tables, as markdown."""
    print("\n### Op costs (moto: mean sequential round trips per World operation)\n")
    print(costs.markdown())
    if show_moto:
        _section(
            "Start path (moto, held: steps wait until every branch started; calls to the last start)",
            markdown_table([r for r in rows if (r.backend, r.mode) == ("moto", "held")]),
        )
        _section(
            "Legacy prologue against run_context, round by round (moto, held; Δ = legacy - run_context)",
            paired_table([p for p in pairs if (p.backend, p.mode) == ("moto", "held")]),
        )
        _section(
            "Whole run (moto, full: trivial steps, completions interleaved; calls over the whole run)",
            markdown_table([r for r in rows if (r.backend, r.mode) == ("moto", "full")]),
        )
    for mode, title in (
        ("held", "Start path (model, held: round trips per step to the last start)"),
        ("full", "Whole run (model, full: round trips per step over the whole run)"),
    ):
        _section(title, model_table([r for r in rows if (r.backend, r.mode) == ("model", mode)]))
        _section(
            f"Legacy prologue against run_context, round by round (model, {mode}; Δ = legacy - run_context)",
            paired_table([p for p in pairs if (p.backend, p.mode) == ("model", mode)]),
        )


def _section(title: str, table: str) -> None:
    if table.count("\n") > 1:  # more than the header and its rule
        print(f"\n### {title}\n")
        print(table)


if __name__ == "__main__":
    sys.exit(main())
