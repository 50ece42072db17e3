"""A workflow whose step fails in the user's helper: twice, and then for good (the error tests)."""

from __future__ import annotations

from world_aws import Workflows

app = Workflows()


def parse_quantity(value: int) -> int:
    raise ValueError(f"bad value {value}")


@app.step(max_retries=1)
def check(value: int) -> int:
    return parse_quantity(value)


@app.workflow
async def validate(value: int) -> int:
    return await check(value)
