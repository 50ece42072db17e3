"""Summaries of fan-out samples: percentiles, per-step call counts, the markdown tables, JSON, the plot.

Samples carry a ``backend``: "moto" (the AWS World on moto, calls counted) or
"model" (the in-memory World with measured latencies, ``bench.model``). Rows and
paired comparisons are per backend; ``markdown_table`` is the moto table (calls by
kind), ``model_table`` the model's (modeled round trips, delivery to claim, TTLS).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.instrument import EMPTY_RECEIVE, KINDS, RUN_READ, kind_of
from bench.measure import RunSample, Variant

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


def markdown(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub markdown table, every column right-aligned."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def plot_or_note(json_path: Path, png_path: Path, draw: Callable[[Path], None]) -> None:
    """Draw the plot into ``png_path`` and say what was written; without matplotlib, say why not."""
    try:
        draw(png_path)
    except ImportError:
        print(f"wrote {json_path}; no plot: matplotlib is missing (pip install -e '.[bench]')")
        return
    print(f"wrote {json_path} and {png_path}")


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
    """One table row: every run of one (backend, mode, N, variant).

    ``round_trips_per_step`` is by service (held: up to the last start; full: the
    whole run); ``delivery_to_claim_p50`` the median of the runs' per-branch medians.
    """

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
    backend: str = "moto"
    round_trips_per_step: dict[str, float] = field(default_factory=dict)
    delivery_to_claim_p50: float = math.nan


def summarise(samples: Iterable[RunSample]) -> list[Row]:
    """Rows in (backend, mode, N, variant) order of first appearance."""
    groups: dict[tuple[str, bool, int, Variant], list[RunSample]] = {}
    for sample in samples:
        groups.setdefault((sample.backend, sample.held, sample.n, sample.variant), []).append(sample)
    rows = []
    for (backend, held, n, variant), group in groups.items():
        runs = len(group)
        per_step: dict[str, float] = {kind: 0.0 for kind, _ in COLUMNS}
        for sample in group:
            # Held runs end in a cancellation tail that is not a fan-out's cost: count to the last start.
            calls = sample.calls_to_last_start if held else sample.calls
            for kind, value in per_step_kinds(calls, n).items():
                per_step[kind] += value / runs
        ttls = [s.ttls_seconds for s in group]
        trips: dict[str, float] = {}
        for sample in group:
            for service, count in (sample.round_trips_to_last_start if held else sample.round_trips).items():
                trips[service] = trips.get(service, 0.0) + count / runs / n
        claims = [s.delivery_to_claim_p50 for s in group if not math.isnan(s.delivery_to_claim_p50)]
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
                backend=backend,
                round_trips_per_step=dict(sorted(trips.items())),
                delivery_to_claim_p50=percentile(claims, 0.5),
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
    backend: str = "moto"


def paired_prologues(samples: Sequence[RunSample]) -> list[Paired]:
    """Per (backend, mode, N, dispatch) and pooled over dispatch: how often legacy was slower, by how much."""
    series: dict[tuple[str, bool, int, str, str], list[float]] = {}
    for sample in samples:
        key = (sample.backend, sample.held, sample.n, sample.variant.dispatch, sample.variant.prologue)
        series.setdefault(key, []).append(sample.ttls_seconds)
    deltas: dict[tuple[str, bool, int, str], list[tuple[float, float]]] = {}
    for (backend, held, n, dispatch, prologue), fast in series.items():
        if prologue != "run_context":
            continue
        slow = series.get((backend, held, n, dispatch, "legacy"), [])
        pairs = [(b - a, (b - a) / a * 100 if a > 0 else math.nan) for a, b in zip(fast, slow, strict=False)]
        deltas.setdefault((backend, held, n, dispatch), []).extend(pairs)
        deltas.setdefault((backend, held, n, "both"), []).extend(pairs)
    out = []
    for (backend, held, n, dispatch), pairs in deltas.items():
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
                backend=backend,
            )
        )
    order = {"resilient": 0, "sequential": 1, "both": 2}
    return sorted(out, key=lambda p: (p.backend != "moto", p.mode != "held", p.n, order.get(p.dispatch, 3)))


def paired_table(pairs: Sequence[Paired]) -> str:
    """The paired comparison as a markdown table."""
    headers = ["N", "dispatch", "rounds", "legacy slower", "median Δ TTLS (s)", "median Δ TTLS (%)"]
    body: list[list[str]] = []
    for pair in pairs:
        cells = [
            str(pair.n),
            pair.dispatch,
            str(pair.rounds),
            f"{pair.legacy_slower}/{pair.rounds}",
            f"{pair.median_delta_seconds:+.3f}",
            f"{pair.median_delta_percent:+.1f}",
        ]
        body.append(cells)
    return markdown(headers, body)


# The first columns of every per-row table: which cell of the benchmark a row is.
_LEAD = ("N", "prologue", "dispatch", "runs")


def _lead(row: Row) -> list[str]:
    return [str(row.n), row.prologue, row.dispatch, str(row.runs)]


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a GitHub markdown table (calls are per step, times in seconds)."""
    headers = [
        *_LEAD,
        *(header for _, header in COLUMNS),
        "run reads before claim",
        "TTLS p50",
        "TTLS p90",
        "moto busy (Query)",
    ]
    body: list[list[str]] = []
    for row in rows:
        cells = [
            *_lead(row),
            *(f"{row.per_step[kind]:.2f}" for kind, _ in COLUMNS),
            f"{row.run_reads_before_claim_per_step:.2f}",
            f"{row.ttls_p50:.2f}",
            f"{row.ttls_p90:.2f}",
            f"{row.emulator_seconds:.1f} ({row.emulator_query_seconds:.1f})",
        ]
        body.append(cells)
    return markdown(headers, body)


def model_table(rows: Sequence[Row]) -> str:
    """Model rows as a markdown table: modeled round trips per step, delivery to claim, TTLS."""
    headers = [
        *_LEAD,
        "DDB round trips",
        "SQS round trips",
        "S3 round trips",
        "run reads before claim",
        "delivery→claim p50 (ms)",
        "TTLS p50",
        "TTLS p90",
        "status",
    ]
    body: list[list[str]] = []
    for row in rows:
        trips = row.round_trips_per_step
        cells = [
            *_lead(row),
            *(f"{trips.get(service, 0.0):.2f}" for service in ("dynamodb", "sqs", "s3")),
            f"{row.run_reads_before_claim_per_step:.2f}",
            f"{row.delivery_to_claim_p50 * 1000:.1f}",
            f"{row.ttls_p50:.3f}",
            f"{row.ttls_p90:.3f}",
            "/".join(row.statuses),
        ]
        body.append(cells)
    return markdown(headers, body)


def write_json(
    path: Path,
    config: dict[str, Any],
    samples: Sequence[RunSample],
    rows: Sequence[Row],
    pairs: Sequence[Paired] = (),
    op_costs: Mapping[str, Any] | None = None,
) -> None:
    """Everything a benchmark run produced, as one JSON document (``op_costs``: ``OpCosts.to_json()``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "config": config,
        "op_costs": op_costs,
        "summary": [asdict(row) for row in rows],
        "paired_prologues": [asdict(pair) for pair in pairs],
        "samples": [asdict(sample) for sample in samples],
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def samples_from_json(document: Mapping[str, Any]) -> list[RunSample]:
    """The samples of a document ``write_json`` wrote (older documents: every sample is moto's)."""
    known = set(RunSample.__dataclass_fields__)
    out = []
    for entry in document.get("samples", []):
        fields = {k: v for k, v in entry.items() if k in known}
        fields["variant"] = Variant(**entry["variant"])
        out.append(RunSample(**fields))
    return out


def plot(path: Path, rows: Sequence[Row], subtitle: str) -> None:
    """TTLS p50 against N, one line per prologue x dispatch mode, one panel per (backend, mode); bars to p90.

    matplotlib is imported here: it is only in the ``bench`` extra.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    backends = [b for b in ("moto", "model") if any(r.backend == b for r in rows)]
    modes = [mode for mode in ("held", "full") if any(r.mode == mode for r in rows)]
    figure, axes = plt.subplots(
        len(backends), len(modes), figsize=(6.5 * len(modes), 4.8 * len(backends)), squeeze=False
    )
    titles = {
        "held": "start path (steps held until all started)",
        "full": "whole run (trivial steps, completions interleaved)",
    }
    sources = {
        "moto": "moto (AWS World, emulator CPU)",
        "model": "model (memory World + measured round trips)",
    }
    for axes_row, backend in zip(axes, backends, strict=True):
        for axis, mode in zip(axes_row, modes, strict=True):
            cell = [r for r in rows if (r.backend, r.mode) == (backend, mode)]
            for prologue, dispatch in sorted({(r.prologue, r.dispatch) for r in cell}):
                line = sorted(
                    (r for r in cell if (r.prologue, r.dispatch) == (prologue, dispatch)), key=lambda r: r.n
                )
                p50 = [r.ttls_p50 for r in line]
                upper = [max(0.0, r.ttls_p90 - r.ttls_p50) for r in line]
                axis.errorbar(
                    [r.n for r in line],
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
            axis.set_title(f"{sources[backend]}\n{titles[mode]}", fontsize=10)
            axis.grid(True, which="both", alpha=0.3)
            if cell:
                axis.legend()
    figure.suptitle(subtitle, fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
