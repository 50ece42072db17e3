"""Cost meter: what world-aws costs per step, billed request by request at list prices.

Each workload (``bench.cost_run.WORKLOADS``; ``--quick``: W0, W1 and W1 with 100 KB inputs)
runs once on the AWS World over in-process moto with the template's batch sizes. Every request
is billed by its service's rules (``bench.billing`` through ``bench.meter``) and attributed to
the World op that made it; Lambda duration is modelled from CPU and round trips
(``bench.invocations``); prices: ``bench.prices.PRICES``. Prints per workload and step the
units, invocations, GB-s and $ per million steps (and on Step Functions and durable functions),
then the breakdown by World op and DynamoDB writes by kind of item; writes
``bench/out/cost.json``. Left out: empty receives (reported), storage, free tiers, logs.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.core import MotoWorlds
from bench.cost_report import CostRow, breakdown_table, items_table, plot, summary_table, write_json
from bench.cost_run import WORKLOADS, CostSample, Meters, run_workload, template_functions
from bench.instrument import CallRecorder, Latency
from bench.invocations import InvocationMeter, propagating_context
from bench.meter import BillingMeter
from bench.report import plot_or_note

DEFAULT_OUT = Path(__file__).resolve().parent / "out"
QUICK = ("W0", "W1", "W1-step100K")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument(
        "--workloads", default=",".join(WORKLOADS), help=f"comma-separated, of {', '.join(WORKLOADS)}"
    )
    parser.add_argument("--ddb-latency-ms", type=float, default=5.0, help="modelled DynamoDB round trip")
    parser.add_argument("--sqs-latency-ms", type=float, default=10.0, help="modelled SQS round trip")
    parser.add_argument("--s3-latency-ms", type=float, default=10.0, help="modelled S3 round trip")
    parser.add_argument("--no-breakdown", action="store_true", help="print the summary table only")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where cost.json and cost.png go")
    args = parser.parse_args(argv)
    names = list(QUICK) if args.quick else [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {', '.join(WORKLOADS)}")
    args.names = names
    return args


@contextmanager
def metered_moto(latency: Latency) -> Iterator[Meters]:
    """In-process moto with the billing and invocation meters on its clients."""
    # No injected latency on moto: the duration model charges round trips itself.
    recorder = CallRecorder(Latency(0.0, 0.0, 0.0))
    with MotoWorlds(recorder) as moto, propagating_context():
        invocations = InvocationMeter(latency.of)
        billing = BillingMeter(recorder, invocations)
        billing.attach(moto.clients)
        yield Meters(moto, billing, invocations, template_functions())


def measure(names: list[str], latency: Latency) -> list[CostSample]:
    """Run each workload once on moto with the meters attached."""
    samples = []
    with metered_moto(latency) as meters:
        for name in names:
            began = time.perf_counter()
            samples.append(run_workload(meters, WORKLOADS[name]))
            print(f"  {name}: {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    return samples


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    latency = Latency(args.ddb_latency_ms / 1000, args.sqs_latency_ms / 1000, args.s3_latency_ms / 1000)
    command = shlex.join(["python", "-m", "bench.cost", *(sys.argv[1:] if argv is None else argv)])
    print(f"$ {command}")
    began = time.perf_counter()
    samples = measure(args.names, latency)
    rows = [CostRow.of(sample, args.ddb_latency_ms) for sample in samples]
    elapsed = time.perf_counter() - began
    print(summary_table(rows))
    if not args.no_breakdown:
        for row in rows:
            print("\n" + breakdown_table(row) + "\n\n" + items_table(row))
    print(
        f"\n{len(rows)} workloads in {elapsed:.0f} s. Units per step; $ per million steps at us-east-1 "
        f"list prices (bench/prices.py). GB-s modelled: CPU + round trips of "
        f"{args.ddb_latency_ms:g} ms DynamoDB, {args.sqs_latency_ms:g} ms SQS, {args.s3_latency_ms:g} ms S3. "
        "Empty receives left out."
    )
    config = {
        "command": command,
        "latency_ms": {"dynamodb": args.ddb_latency_ms, "sqs": args.sqs_latency_ms, "s3": args.s3_latency_ms},
        "elapsed_seconds": round(elapsed, 1),
    }
    write_json(args.out / "cost.json", config, samples, rows)
    plot_or_note(args.out / "cost.json", args.out / "cost.png", lambda png: plot(png, rows, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
