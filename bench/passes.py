"""Running a benchmark pass round by round, and printing what the passes measured.

Both backends (``bench.core.FanoutBench`` on moto, ``bench.model.ModelBench``) run
the same rounds: for each N, ``runs`` rounds of every variant back to back, so that
drift (load, a growing table) hits them alike, in alternating order, so that no
variant always runs first in its round (``bench.report.paired_prologues`` pairs
the k-th runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from bench.measure import RunSample, Variant, all_variants
from bench.opcosts import OpCosts
from bench.report import Paired, Row, markdown_table, model_table, paired_table


class Bench(Protocol):
    def run_once(self, n: int, variant: Variant, *, held: bool = False) -> RunSample: ...


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
