"""List prices (us-east-1) and what a workload's units cost; the comparison services' models.

``PRICES`` is the one table of prices the cost meter uses, each with its source.
Read on 2026-12-01; free tiers are left out (they are per account, not per step).

The comparisons price the same workload shape on the two managed alternatives:

* Step Functions Standard: one Task state per step (one state transition), plus one
  transition for the Map state of a ``gather``; each Task invokes a Lambda that
  runs the step body (one request, billed at the 1 ms minimum at the same memory);
* Lambda durable functions: one durable operation to start the execution, one per
  step, and for a ``gather`` one for the map plus one child context per branch;
  the data written is each step's checkpointed result and the workflow input; the
  compute is one invocation per run (no waits: the execution never suspends) whose
  duration is the step bodies plus one checkpoint round trip per operation at the
  DynamoDB latency (an assumption: AWS does not publish the checkpoint latency).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Price:
    """``usd`` per ``per`` units of ``unit``, from ``source``."""

    usd: float
    per: int
    unit: str
    source: str

    def of(self, units: float) -> float:
        return self.usd * units / self.per


PRICES: dict[str, Price] = {
    "dynamodb_wru": Price(
        0.625,
        1_000_000,
        "write request unit (on-demand, Standard table class)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "dynamodb_rru": Price(
        0.125,
        1_000_000,
        "read request unit (on-demand, Standard table class)",
        "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    ),
    "sqs_request": Price(
        0.40,
        1_000_000,
        "standard queue request (per 64 KB chunk), beyond the first million",
        "https://aws.amazon.com/sqs/pricing/",
    ),
    "s3_put": Price(
        0.005, 1_000, "S3 Standard PUT, COPY, POST, LIST request", "https://aws.amazon.com/s3/pricing/"
    ),
    "s3_get": Price(
        0.0004, 1_000, "S3 Standard GET and all other requests", "https://aws.amazon.com/s3/pricing/"
    ),
    "kms_request": Price(
        0.03,
        10_000,
        "KMS request to a symmetric key (GenerateDataKey, Decrypt), beyond the free 20,000 a month",
        "https://aws.amazon.com/kms/pricing/",
    ),
    "lambda_request": Price(0.20, 1_000_000, "Lambda request", "https://aws.amazon.com/lambda/pricing/"),
    "lambda_gb_second_arm64": Price(
        0.0000133334,
        1,
        "Lambda duration, GB-second, arm64 (first 7.5 billion GB-s a month)",
        "https://aws.amazon.com/lambda/pricing/",
    ),
    "step_functions_transition": Price(
        25.0,
        1_000_000,
        "Step Functions Standard state transition ($0.025 per 1,000)",
        "https://aws.amazon.com/step-functions/pricing/",
    ),
    "durable_operation": Price(
        8.00,
        1_000_000,
        "Lambda durable functions durable operation (start, step, wait, callback, ...)",
        "https://aws.amazon.com/lambda/pricing/ (durable functions)",
    ),
    "durable_data_written_gb": Price(
        0.25,
        1,
        "Lambda durable functions data written, per GB",
        "https://aws.amazon.com/lambda/pricing/ (durable functions)",
    ),
}

GB = 1024**3


def dollars(units: dict[str, float]) -> dict[str, float]:
    """Dollars per priced line: ``units`` maps a ``PRICES`` key to a quantity (GB-s for duration)."""
    return {key: PRICES[key].of(quantity) for key, quantity in units.items() if quantity}


@dataclass(frozen=True, slots=True)
class Shape:
    """What a workload is, for the comparison models."""

    steps: int
    gathers: int
    step_result_bytes: int
    workflow_input_bytes: int
    step_body_ms: float
    memory_mb: int
    checkpoint_ms: float


def step_functions_dollars(shape: Shape) -> float:
    """One run of ``shape`` on Step Functions Standard (model in the module docstring)."""
    transitions = shape.steps + shape.gathers
    seconds = shape.steps * max(1.0, shape.step_body_ms) / 1000
    return (
        PRICES["step_functions_transition"].of(transitions)
        + PRICES["lambda_request"].of(shape.steps)
        + PRICES["lambda_gb_second_arm64"].of(shape.memory_mb / 1024 * seconds)
    )


def durable_functions_dollars(shape: Shape) -> float:
    """One run of ``shape`` on Lambda durable functions (model in the module docstring)."""
    operations = 1 + shape.steps + (shape.gathers + (shape.steps if shape.gathers else 0))
    written = shape.steps * shape.step_result_bytes + shape.workflow_input_bytes
    seconds = (shape.steps * shape.step_body_ms + operations * shape.checkpoint_ms) / 1000
    return (
        PRICES["durable_operation"].of(operations)
        + PRICES["durable_data_written_gb"].of(written / GB)
        + PRICES["lambda_request"].of(1)
        + PRICES["lambda_gb_second_arm64"].of(shape.memory_mb / 1024 * max(0.001, seconds))
    )
