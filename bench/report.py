"""Summaries of fan-out samples: percentiles, per-step call counts, the markdown table, JSON, the plot."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.core import RunSample, Variant
from bench.instrument import EMPTY_RECEIVE, KINDS, RUN_READ, kind_of

# Columns of the table, in order: (kind, header).
COLUMNS = (
    ("ddb_read", "DDB reads"),
    ("ddb_write", "DDB writes"),
    ("ddb_txn", "DDB txns"),
    ("sqs_send", "SQS sends"),
    ("sqs_receive", "SQS receives"),
    ("sqs_delete", "SQS deletes"),
    ("sqs_visibility", "SQS visibility"),
    ("s3", "S3"),
)
assert {kind for kind, _ in COLUMNS} - {"s3"} == set(KINDS)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) with linear interpolation between order statistics."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def per_step_kinds(calls: dict[str, int], n: int) -> dict[str, float]:
    """Calls per step by reporting kind (empty receives and the run-read tally left out)."""
    totals: dict[str, float] = {kind: 0.0 for kind, _ in COLUMNS}
    for operation, count in calls.items():
        if operation in (EMPTY_RECEIVE, RUN_READ):
            continue
        kind = kind_of(operation)
        if kind in totals:
            totals[kind] += count / n
    return totals


@dataclass(frozen=True, slots=True)
class Row:
    """One table row: every run of one (mode, N, variant)."""

    mode: str
    n: int
    prologue: str
    dispatch: str
    runs: int
    per_step: dict[str, float]
    run_reads_before_claim_per_step: float
    ttls_p50: float
    ttls_p90: float
    emulator_seconds: float
    emulator_query_seconds: float
    steps_completed_per_run: float
    statuses: list[str]


def summarise(samples: Iterable[RunSample]) -> list[Row]:
    """Rows in (mode, N, variant) order of first appearance."""
    groups: dict[tuple[bool, int, Variant], list[RunSample]] = {}
    for sample in samples:
        groups.setdefault((sample.held, sample.n, sample.variant), []).append(sample)
    rows = []
    for (held, n, variant), group in groups.items():
        runs = len(group)
        per_step: dict[str, float] = {kind: 0.0 for kind, _ in COLUMNS}
        for sample in group:
            # Held runs end in a cancellation tail that is not a fan-out's cost: count to the last start.
            calls = sample.calls_to_last_start if held else sample.calls
            for kind, value in per_step_kinds(calls, n).items():
                per_step[kind] += value / runs
        ttls = [s.ttls_seconds for s in group]
        rows.append(
            Row(
                mode="held" if held else "full",
                n=n,
                prologue=variant.prologue,
                dispatch=variant.dispatch,
                runs=runs,
                per_step=per_step,
                run_reads_before_claim_per_step=sum(s.pre_claim_run_reads for s in group) / runs / n,
                ttls_p50=percentile(ttls, 0.5),
                ttls_p90=percentile(ttls, 0.9),
                emulator_seconds=sum(sum(s.emulator_busy.values()) for s in group) / runs,
                emulator_query_seconds=sum(s.emulator_busy.get("dynamodb.Query", 0.0) for s in group) / runs,
                steps_completed_per_run=sum(s.steps_completed for s in group) / runs,
                statuses=sorted({s.run_status for s in group}),
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class Paired:
    """The legacy prologue against ``run_context``, round by round, for one (mode, N, dispatch).

    Rounds pair the k-th run of each prologue (the benchmark runs the variants of a
    round back to back, alternating their order), so that load drifting over minutes
    hits both sides of a pair alike. ``dispatch`` is "both" for the pool of the two modes.
    """

    mode: str
    n: int
    dispatch: str
    rounds: int
    legacy_slower: int
    median_delta_seconds: float  # legacy TTLS minus run_context TTLS, median over rounds
    median_delta_percent: float  # the same relative to run_context


def paired_prologues(samples: Sequence[RunSample]) -> list[Paired]:
    """Per (mode, N, dispatch) and pooled over dispatch modes: how often legacy was slower, by how much."""
    series: dict[tuple[bool, int, str, str], list[float]] = {}
    for sample in samples:
        key = (sample.held, sample.n, sample.variant.dispatch, sample.variant.prologue)
        series.setdefault(key, []).append(sample.ttls_seconds)
    deltas: dict[tuple[bool, int, str], list[tuple[float, float]]] = {}
    for (held, n, dispatch, prologue), fast in series.items():
        if prologue != "run_context":
            continue
        slow = series.get((held, n, dispatch, "legacy"), [])
        pairs = [(b - a, (b - a) / a * 100 if a > 0 else math.nan) for a, b in zip(fast, slow, strict=False)]
        deltas.setdefault((held, n, dispatch), []).extend(pairs)
        deltas.setdefault((held, n, "both"), []).extend(pairs)
    out = []
    for (held, n, dispatch), pairs in deltas.items():
        if not pairs:
            continue
        out.append(
            Paired(
                mode="held" if held else "full",
                n=n,
                dispatch=dispatch,
                rounds=len(pairs),
                legacy_slower=sum(1 for d, _ in pairs if d > 0),
                median_delta_seconds=percentile([d for d, _ in pairs], 0.5),
                median_delta_percent=percentile([pct for _, pct in pairs], 0.5),
            )
        )
    order = {"resilient": 0, "sequential": 1, "both": 2}
    return sorted(out, key=lambda p: (p.mode != "held", p.n, order.get(p.dispatch, 3)))


def paired_table(pairs: Sequence[Paired]) -> str:
    """The paired comparison as a markdown table."""
    headers = ["N", "dispatch", "rounds", "legacy slower", "median Δ TTLS (s)", "median Δ TTLS (%)"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    for pair in pairs:
        cells = [
            str(pair.n),
            pair.dispatch,
            str(pair.rounds),
            f"{pair.legacy_slower}/{pair.rounds}",
            f"{pair.median_delta_seconds:+.2f}",
            f"{pair.median_delta_percent:+.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a GitHub markdown table (calls are per step, times in seconds)."""
    headers = [
        "N",
        "prologue",
        "dispatch",
        "runs",
        *(header for _, header in COLUMNS),
        "run reads before claim",
        "TTLS p50",
        "TTLS p90",
        "moto busy (Query)",
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    for row in rows:
        cells = [
            str(row.n),
            row.prologue,
            row.dispatch,
            str(row.runs),
            *(f"{row.per_step[kind]:.2f}" for kind, _ in COLUMNS),
            f"{row.run_reads_before_claim_per_step:.2f}",
            f"{row.ttls_p50:.2f}",
            f"{row.ttls_p90:.2f}",
            f"{row.emulator_seconds:.1f} ({row.emulator_query_seconds:.1f})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(
    path: Path,
    config: dict[str, Any],
    samples: Sequence[RunSample],
    rows: Sequence[Row],
    pairs: Sequence[Paired] = (),
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "config": config,
        "summary": [asdict(row) for row in rows],
        "paired_prologues": [asdict(pair) for pair in pairs],
        "samples": [asdict(sample) for sample in samples],
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def plot(path: Path, rows: Sequence[Row], subtitle: str) -> None:
    """TTLS p50 against N, one line per prologue x dispatch mode, one panel per mode; bars to p90.

    matplotlib is imported here: it is only in the ``bench`` extra.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = [mode for mode in ("held", "full") if any(r.mode == mode for r in rows)]
    figure, axes = plt.subplots(1, len(modes), figsize=(6.5 * len(modes), 4.8), squeeze=False)
    titles = {
        "held": "start path (steps held until all started)",
        "full": "whole run (trivial steps, completions interleaved)",
    }
    for axis, mode in zip(axes[0], modes, strict=True):
        labels = sorted({(r.prologue, r.dispatch) for r in rows if r.mode == mode})
        for prologue, dispatch in labels:
            line = sorted(
                (r for r in rows if (r.mode, r.prologue, r.dispatch) == (mode, prologue, dispatch)),
                key=lambda r: r.n,
            )
            ns = [r.n for r in line]
            p50 = [r.ttls_p50 for r in line]
            upper = [max(0.0, r.ttls_p90 - r.ttls_p50) for r in line]
            axis.errorbar(
                ns,
                p50,
                yerr=[[0.0] * len(line), upper],
                marker="o" if prologue == "run_context" else "s",
                linestyle="-" if dispatch == "resilient" else "--",
                capsize=3,
                label=f"{prologue} / {dispatch}",
            )
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("branches N")
        axis.set_ylabel("time to last step start (s), p50, bar to p90")
        axis.set_title(titles[mode])
        axis.grid(True, which="both", alpha=0.3)
        axis.legend()
    figure.suptitle(subtitle, fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
