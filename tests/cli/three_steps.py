"""A trivial three-step workflow: what a first `world-aws run` looks like (the speed test)."""

from __future__ import annotations

from world_aws import Workflows

app = Workflows()


@app.step
def add_one(x: int) -> int:
    return x + 1


@app.step
def double(x: int) -> int:
    return x * 2


@app.step
def minus_three(x: int) -> int:
    return x - 3


@app.workflow
async def three(x: int) -> int:
    return await minus_three(await double(await add_one(x)))


@app.workflow
async def big(size: int) -> bytes:
    return b"x" * size


@app.workflow
async def echo(text: str) -> str:
    return text
