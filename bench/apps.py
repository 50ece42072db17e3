"""Workflow apps for timing ``world-aws run`` itself on the embedded default (issue 12's W2 and W4).

``python -m bench.firstrun --reps 3 --out bench/out/embedded_w2.json --command run
bench.apps:app w2 --arg 100`` (and ``w4 --arg 256``): trivial step bodies, so the time
is the runtime's and the embedded World's.
"""

from __future__ import annotations

import asyncio

from world_aws import Workflows

app = Workflows()


@app.step(name="bench.apps.leaf")
def leaf(i: int) -> int:
    return i


@app.workflow
async def w2(steps: int) -> int:
    """W2: ``steps`` sequential steps."""
    for i in range(steps):
        await leaf(i)
    return steps


@app.workflow
async def w4(steps: int) -> int:
    """W4: an ``asyncio.gather`` of ``steps`` steps."""
    values = await asyncio.gather(*(leaf(i) for i in range(steps)))
    return len(values)
