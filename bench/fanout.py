"""Step-dispatch benchmark (issue 6, SPEC §5): what an N-branch fan-out costs and how fast it starts.

Run from the repository root (matplotlib comes with the ``bench`` extra)::

    python -m bench.fanout            # the benchmark (about 15 minutes on 2 cores)
    python -m bench.fanout --quick    # N in 1, 16; 2 runs: a smoke run of a minute
    python -m bench.fanout --ns 64 --full-ns ""   # the held pass at one N

For each N and each variant — step-message prologue ``run_context`` (SPEC §5.1) or
``legacy`` (the producer omits run_context, so the consumer reads the run first)
x dispatch ``resilient`` (SPEC §5.2) or ``sequential`` — it runs ``bench.fanout(N)``
(``asyncio.gather`` of N steps) on the AWS World over in-process moto, with an
injected latency per AWS call, and reports per step: DynamoDB reads / writes /
transactions, SQS sends / receives / deletes / visibility changes, S3 calls,
run reads before the claim, and the time from ``start()`` to the last branch's
``step_started`` (TTLS, p50/p90 over the runs). Two passes:

* held (the TTLS table): each step blocks until all N branches have started, so
  TTLS measures the start path alone; calls are counted up to the last start;
* full (the whole-run table): trivial steps, ``--workers`` step consumers,
  completions interleaved with starts, calls counted over the whole run.

Outputs: the markdown tables on stdout, ``bench/out/fanout.json`` (every sample)
and ``bench/out/fanout.png`` (TTLS against N).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from pathlib import Path

from bench.core import FanoutBench, PumpShape, RunSample, Variant, all_variants
from bench.instrument import Latency
from bench.report import markdown_table, paired_prologues, paired_table, plot, summarise, write_json

DEFAULT_OUT = Path(__file__).resolve().parent / "out"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N in 1, 16; 2 runs; full pass at 1, 16")
    parser.add_argument("--ns", default="1,16,64,256", help="branch counts of the held (TTLS) pass")
    parser.add_argument("--runs", type=int, default=5, help="runs per N and variant (held pass)")
    parser.add_argument(
        "--runs-256", type=int, default=5, help="runs per variant for N >= 256 (held pass; each ~25 s)"
    )
    parser.add_argument(
        "--full-ns",
        default="1,16,64,256",
        help="branch counts of the full pass, one run each ('' to skip)",
    )
    parser.add_argument("--ddb-latency-ms", type=float, default=5.0)
    parser.add_argument("--sqs-latency-ms", type=float, default=10.0)
    parser.add_argument("--s3-latency-ms", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=16, help="step consumers in the full pass")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where fanout.json and fanout.png go")
    args = parser.parse_args(argv)
    if args.quick:
        args.ns, args.runs, args.runs_256, args.full_ns = "1,16", 2, 2, "1,16"
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
    variants = all_variants()
    runs_for = {n: (args.runs_256 if n >= 256 else args.runs) for n in held_ns}
    command = shlex.join(["python", "-m", "bench.fanout", *(argv if argv is not None else sys.argv[1:])])
    print(f"$ {command.strip()}")
    print(
        f"latency per call: DynamoDB {args.ddb_latency_ms:g} ms, SQS {args.sqs_latency_ms:g} ms, "
        f"S3 {args.s3_latency_ms:g} ms; held pass N={held_ns} runs {runs_for}; "
        f"full pass N={full_ns} (1 run each, {args.workers} step consumers)",
        flush=True,
    )
    samples: list[RunSample] = []
    began = time.perf_counter()
    with FanoutBench(latency, PumpShape(step_workers=args.workers)) as bench:
        bench.run_once(4, Variant("run_context", "resilient"))  # warm-up, not recorded
        for n in held_ns:
            # Variants interleaved run by run, so that drift (load, a growing table) hits them
            # alike, in alternating order, so that no variant always runs first in its round.
            for run in range(runs_for[n]):
                for variant in variants if run % 2 == 0 else variants[::-1]:
                    samples.append(_measured(bench, n, variant, held=True, run=run))
        for n in full_ns:
            for variant in variants:
                samples.append(_measured(bench, n, variant, held=False, run=0))
    elapsed = time.perf_counter() - began
    rows = summarise(samples)
    held_rows = [r for r in rows if r.mode == "held"]
    full_rows = [r for r in rows if r.mode == "full"]
    notes = (
        f"{len(samples)} runs in {elapsed:.0f} s. Calls are per step; receives count only those that "
        "brought messages; TTLS and moto busy time in seconds. Held runs per variant: "
        + ", ".join(f"N={n}: {r}" for n, r in runs_for.items())
        + "."
    )
    if held_rows:
        print("\n### Start path (held: steps wait until every branch started; calls to the last start)\n")
        print(markdown_table(held_rows))
    pairs = [p for p in paired_prologues(samples) if p.mode == "held"]
    if pairs:
        print("\n### Legacy prologue against run_context, round by round (held; Δ = legacy - run_context)\n")
        print(paired_table(pairs))
    if full_rows:
        print("\n### Whole run (full: trivial steps, completions interleaved; calls over the whole run)\n")
        print(markdown_table(full_rows))
    print(f"\n{notes}")
    config = {
        "command": command.strip(),
        "latency_ms": {"dynamodb": args.ddb_latency_ms, "sqs": args.sqs_latency_ms, "s3": args.s3_latency_ms},
        "held_ns": held_ns,
        "runs": {str(n): r for n, r in runs_for.items()},
        "full_ns": full_ns,
        "step_workers_full": args.workers,
        "elapsed_seconds": round(elapsed, 1),
    }
    write_json(args.out / "fanout.json", config, samples, rows, pairs)
    subtitle = (
        f"AWS World on in-process moto; injected latency DynamoDB {args.ddb_latency_ms:g} ms, "
        f"SQS {args.sqs_latency_ms:g} ms; {command.strip()}"
    )
    plot(args.out / "fanout.png", rows, subtitle)
    print(f"wrote {args.out / 'fanout.json'} and {args.out / 'fanout.png'}")
    return 0


def _measured(bench: FanoutBench, n: int, variant: Variant, *, held: bool, run: int) -> RunSample:
    sample = bench.run_once(n, variant, held=held)
    mode = "held" if held else "full"
    print(
        f"  {mode} N={n:<3} {variant.label:<26} run {run + 1}: TTLS {sample.ttls_seconds:6.2f} s, "
        f"run reads before claim {sample.pre_claim_run_reads}, {sample.run_status}, "
        f"{sample.wall_seconds:.1f} s",
        flush=True,
    )
    return sample


if __name__ == "__main__":
    sys.exit(main())
