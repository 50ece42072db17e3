"""The cost meter's results: dollars per million steps, per-op breakdowns, markdown, JSON, a plot.

``CostRow.of(sample, latency_ms)`` prices one ``CostSample`` with ``bench.prices``:
per step, the units (WRU including GSI upkeep, RRU, SQS requests, S3 requests,
invocations, modelled GB-s), the dollars per million steps by line, the same
workload priced on Step Functions Standard and Lambda durable functions, and the
breakdown by World operation (Lambda's requests and duration as two more rows).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.cost_run import CostSample
from bench.prices import PRICES, Shape, durable_functions_dollars, step_functions_dollars
from bench.usage import Usage

MILLION = 1_000_000
# Assumed size of a step's checkpointed result on durable functions (a small int plus framing).
STEP_RESULT_BYTES = 64
LINES = (
    "dynamodb writes",
    "dynamodb GSI writes",
    "dynamodb reads",
    "sqs",
    "s3",
    "kms",
    "lambda requests",
    "lambda duration",
)


def usage_dollars(usage: Usage) -> dict[str, float]:
    """Dollars of ``usage`` by line (no Lambda lines: those are per invocation, not per request)."""
    return {
        "dynamodb writes": PRICES["dynamodb_wru"].of(usage.wru),
        "dynamodb GSI writes": PRICES["dynamodb_wru"].of(usage.gsi_wru),
        "dynamodb reads": PRICES["dynamodb_rru"].of(usage.rru),
        "sqs": PRICES["sqs_request"].of(usage.sqs_requests),
        "s3": PRICES["s3_put"].of(usage.s3_put) + PRICES["s3_get"].of(usage.s3_get),
        "kms": PRICES["kms_request"].of(usage.kms_requests),
    }


@dataclass(frozen=True, slots=True)
class CostRow:
    """One workload's figures, per step; dollars per million steps."""

    workload: str
    description: str
    steps: int
    per_step: dict[str, float]
    dollars: dict[str, float]
    step_functions: float
    durable_functions: float
    breakdown: dict[str, dict[str, float]]
    items: dict[str, dict[str, float]]
    wall_seconds: float

    @property
    def total(self) -> float:
        return sum(self.dollars.values())

    @classmethod
    def of(cls, sample: CostSample, ddb_latency_ms: float) -> CostRow:
        steps = sample.workload.steps
        per_million_steps = MILLION / steps
        total = sample.total
        memory = max(sample.memory_mb.values())
        per_step = {
            "wru": (total.wru + total.gsi_wru) / steps,
            "gsi_wru": total.gsi_wru / steps,
            "rru": total.rru / steps,
            "sqs_requests": total.sqs_requests / steps,
            "sqs_empty_receives": total.sqs_empty_receives / steps,
            "s3_requests": (total.s3_put + total.s3_get) / steps,
            "kms_requests_per_run": float(total.kms_requests),
            "invocations": sample.invocations / steps,
            "gb_seconds": sample.gb_seconds / steps,
            "calls": total.calls / steps,
        }
        lambda_lines = {
            "lambda requests": PRICES["lambda_request"].of(sample.invocations),
            "lambda duration": PRICES["lambda_gb_second_arm64"].of(sample.gb_seconds),
        }
        dollars = {k: v * per_million_steps for k, v in {**usage_dollars(total), **lambda_lines}.items()}
        breakdown: dict[str, dict[str, float]] = {}
        for op, usage in sample.bill.items():
            entry = {k: v / steps for k, v in usage.scaled(1).items() if v and k != "sqs_empty_receives"}
            entry["usd_per_million_steps"] = sum(usage_dollars(usage).values()) * per_million_steps
            breakdown[op] = entry
        for line, usd in lambda_lines.items():
            breakdown[line.replace(" ", ".")] = {"usd_per_million_steps": usd * per_million_steps}
        shape = Shape(
            steps=steps,
            gathers=1 if sample.workload.gather else 0,
            step_result_bytes=STEP_RESULT_BYTES,
            workflow_input_bytes=sample.workload.workflow_input_bytes,
            step_body_ms=1.0,
            memory_mb=memory,
            checkpoint_ms=ddb_latency_ms,
        )
        items = {
            kind: {
                "writes": w.writes / steps,
                "transactional": w.transactional / steps,
                "wru": w.wru / steps,
                "mean_bytes": w.bytes / w.writes,
            }
            for kind, w in sorted(sample.items.items(), key=lambda kv: -kv[1].wru)
        }
        return cls(
            workload=sample.workload.name,
            description=sample.workload.description,
            steps=steps,
            per_step=per_step,
            dollars=dollars,
            step_functions=step_functions_dollars(shape) * per_million_steps,
            durable_functions=durable_functions_dollars(shape) * per_million_steps,
            breakdown=dict(sorted(breakdown.items(), key=lambda kv: -kv[1]["usd_per_million_steps"])),
            items=items,
            wall_seconds=sample.wall_seconds,
        )


def _table(headers: list[str], rows: list[list[str]], title: str = "") -> str:
    """A markdown table, its first column left-aligned, the others right-aligned; a title line above."""
    lines = [title, ""] if title else []
    lines += ["| " + " | ".join(headers) + " |", "|---|" + "---:|" * (len(headers) - 1)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    return "\n".join(lines)


def summary_table(rows: list[CostRow]) -> str:
    """Per workload, per step: units, and dollars per million steps (with the two comparisons)."""
    headers = [
        "workload", "steps", "WRU (GSI)", "RRU", "SQS req", "S3 req", "KMS req/run", "invocations", "GB-s",
        "$/M steps", "Step Functions", "durable functions",
    ]  # fmt: skip
    body = []
    for row in rows:
        p = row.per_step
        cells = [
            f"{row.workload}: {row.description}",
            str(row.steps),
            f"{p['wru']:.2f} ({p['gsi_wru']:.2f})",
            f"{p['rru']:.2f}",
            f"{p['sqs_requests']:.2f}",
            f"{p['s3_requests']:.2f}",
            f"{p.get('kms_requests_per_run', 0.0):.0f}",
            f"{p['invocations']:.2f}",
            f"{p['gb_seconds']:.4f}",
            f"**{row.total:.2f}**",
            f"{row.step_functions:.2f}",
            f"{row.durable_functions:.2f}",
        ]
        body.append(cells)
    return _table(headers, body)


def breakdown_table(row: CostRow) -> str:
    """Which World op cost what in ``row``'s workload, per step, most expensive first."""
    body = []
    for op, entry in row.breakdown.items():
        usd = entry["usd_per_million_steps"]
        s3 = entry.get("s3_put", 0.0) + entry.get("s3_get", 0.0)
        cells = [
            f"`{op}`",
            *(f"{entry.get(k, 0.0):.2f}" for k in ("calls", "wru", "gsi_wru", "rru", "sqs_requests")),
            f"{s3:.2f}",
            f"{usd:.2f}",
            f"{100 * usd / row.total:.0f}%" if row.total else "",
        ]
        body.append(cells)
    headers = ["op", "calls", "WRU", "GSI WRU", "RRU", "SQS req", "S3 req", "$/M steps", "share"]
    return _table(headers, body, f"{row.workload} ({row.description}): by World operation, per step")


def items_table(row: CostRow) -> str:
    """DynamoDB writes per step by kind of item: how many, in transactions, WRU, mean size billed."""
    body = [
        [
            f"`{kind}`",
            f"{e['writes']:.2f}",
            f"{e['transactional']:.2f}",
            f"{e['wru']:.2f}",
            f"{e['mean_bytes']:.0f}",
        ]
        for kind, e in row.items.items()
    ]
    headers = ["item", "writes", "in transactions", "WRU", "mean bytes (larger image)"]
    return _table(headers, body, f"{row.workload}: DynamoDB writes by item, per step")


def write_json(path: Path, config: dict[str, Any], samples: list[CostSample], rows: list[CostRow]) -> None:
    """Everything the run measured, with the prices it used."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "config": config,
        "prices": {key: asdict(price) for key, price in PRICES.items()},
        "rows": [{**asdict(row), "usd_per_million_steps": row.total} for row in rows],
        "samples": [
            {
                "workload": asdict(s.workload),
                "bill": {op: u.to_json() for op, u in s.bill.items()},
                "item_writes": {kind: w.to_json() for kind, w in s.items.items()},
                "functions": {name: asdict(f) for name, f in s.functions.items()},
                "memory_mb": s.memory_mb,
                "wall_seconds": round(s.wall_seconds, 2),
                "run_status": s.run_status,
                "steps_completed": s.steps_completed,
            }
            for s in samples
        ],
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def plot(path: Path, rows: list[CostRow], subtitle: str) -> None:
    """Dollars per million steps by line, one stacked bar per workload, the comparisons as markers.

    Raises:
        ImportError: matplotlib is missing (the ``bench`` extra).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 2.2))
    labels = [f"{r.workload}: {r.description}" for r in rows][::-1]
    ordered = rows[::-1]
    left = [0.0] * len(rows)
    for line in LINES:
        widths = [r.dollars.get(line, 0.0) for r in ordered]
        ax.barh(labels, widths, left=left, label=line)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    for attribute, marker, size, label in (
        ("step_functions", "|", 300, "Step Functions Standard"),
        ("durable_functions", "x", 60, "Lambda durable functions"),
    ):
        xs = [getattr(r, attribute) for r in ordered]
        ax.scatter(xs, labels, marker=marker, s=size, color="black", label=label)
    ax.set_xlabel("$ per million steps (us-east-1 list prices)")
    ax.set_title(f"world-aws cost per step\n{subtitle}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")  # W0 is on top, and the cheapest
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
