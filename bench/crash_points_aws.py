"""Crash points on the AWS World (moto): ``python -m bench.crash_points_aws``.

The cases are ``harness.chaos.crash_points_aws``'s; this writes the table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.recovery import write_doc
from harness.chaos.crash_points import broken
from harness.chaos.crash_points_aws import case_id, record, run_case, subset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.crash_points_aws", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc", type=Path, help="write the table into this page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    logging.disable(logging.ERROR)
    began = time.perf_counter()
    points, row = record()
    cases = subset(points)
    print(
        f"reference run on moto: {len(points)} calls of {len(cases)} kinds, {row['wall_seconds']} s",
        flush=True,
    )
    counts: Counter[str] = Counter()
    failures: dict[str, Any] = {}
    for kind, point in cases:
        hit, case = run_case(kind, point)
        counts["cases"] += 1
        counts["fired" if hit else "not reached"] += 1
        counts["reconciled"] += case["reconciled"]
        wrong = broken(case)
        if wrong:
            failures[case_id(kind, point)] = wrong
        print(f"  {case_id(kind, point)}: {'fired' if hit else 'not reached'}, {'FAILED' if wrong else 'ok'}")
    summary = {**counts, "failed": len(failures), "seconds": round(time.perf_counter() - began, 1)}
    print(json.dumps(summary))
    if args.doc is not None:
        rows = [f"| `{case_id(kind, point)}` | {kind} |" for kind, point in cases]
        table = "\n".join(
            [
                "| calls recorded | kinds in deliveries (cases) | fault fired | failed | reconciler wakes "
                "| wall (1 process) |",
                "|---:|---:|---:|---:|---:|---:|",
                f"| {len(points)} | {summary['cases']} | {summary.get('fired', 0)} | {summary['failed']} "
                f"| {summary.get('reconciled', 0)} | {summary['seconds']} s |",
                "",
                "| case | fault |",
                "|---|---|",
                *rows,
                "",
                "`python -m bench.crash_points_aws` (AWS World on moto, one case per kind of call).",
            ]
        )
        write_doc(args.doc, "bench.crash_points_aws", table)
    for name, wrong in list(failures.items())[:10]:
        print(name, json.dumps(wrong)[:2000])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
