"""What each World operation costs on AWS, as a markdown table: ``python -m bench.world_ops``.

The scenarios and the call counter are ``harness.round_trips``' (shared with the event-plan tests).
"""

from __future__ import annotations

from harness.round_trips import CallCounter, Cost, cost_of, scenarios
from world_aws.contract.clock import ManualClock
from world_aws.testing.aws_factory import aws_world


def table(rows: list[tuple[str, Cost]]) -> str:
    lines = [
        "| operation | outcome | DynamoDB reads | writes | transactions | S3 | round trips |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, cost in rows:
        lines.append(
            f"| {name} | {cost.outcome} | {cost.reads} | {cost.writes} | {cost.transactions} | "
            f"{cost.s3} | {cost.round_trips} |"
        )
    return "\n".join(lines)


def main() -> None:
    clock = ManualClock()
    with aws_world(clock) as world:
        counter = CallCounter(world)
        rows = [(name, cost_of(counter, operation)) for name, operation in scenarios(world, clock)]
    print(table(rows))


if __name__ == "__main__":
    main()
