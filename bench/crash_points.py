"""Every crash point of the chaos reference run: ``python -m bench.crash_points``.

The cases are ``harness.chaos.crash_points``'s; this writes the table of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from typing import Any

from harness.chaos.crash_points import KINDS, broken, record, run_case


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.crash_points", description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--every", type=int, default=1, help="take every n-th call (1: all)")
    parser.add_argument("--doc", help="write the summary table into this page (docs/benchmarks.md)")
    args = parser.parse_args(argv)
    logging.disable(logging.ERROR)
    began = time.perf_counter()
    points, row = record()
    print(f"reference run: {len(points)} calls, {row['wall_seconds']} s", flush=True)
    failures: dict[str, Any] = {}
    counts: Counter[str] = Counter()
    for index in range(0, len(points), args.every):
        for kind in args.kinds.split(","):
            hit, case = run_case(kind, points[index])
            counts["cases"] += 1
            counts["fired" if hit else "not reached"] += 1
            counts["reconciled"] += case["reconciled"]
            wrong = broken(case)
            if wrong:
                failures[f"{kind}-{index}"] = wrong
    summary = {
        **counts,
        "failed": len(failures),
        "calls": len(points),
        "seconds": round(time.perf_counter() - began, 1),
    }
    print(json.dumps(summary))
    if args.doc:
        from pathlib import Path

        from bench.recovery import write_doc

        table = "\n".join(
            [
                "| calls recorded | cases | fault fired | failed | reconciler wakes | wall (1 process) |",
                "|---:|---:|---:|---:|---:|---:|",
                f"| {summary['calls']} | {summary['cases']} | {summary.get('fired', 0)} "
                f"| {summary['failed']} | {summary.get('reconciled', 0)} | {summary['seconds']} s |",
                "",
                "`python -m bench.crash_points` (crash before, crash after, transient error, at every call).",
            ]
        )
        write_doc(Path(args.doc), "bench.crash_points", table)
    for case_id, wrong in list(failures.items())[:10]:
        print(case_id, json.dumps(wrong)[:2000])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
