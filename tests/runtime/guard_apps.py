"""Workflows that make a non-deterministic call in workflow code, one per call the guard refuses."""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import world_aws
from world_aws import Workflows

app = Workflows()

# name -> (the call, the replacement the error must name)
CALLS: dict[str, tuple[Callable[[], Any], str]] = {
    "time_time": (lambda: time.time(), "world_aws.now()"),
    "time_monotonic": (lambda: time.monotonic(), "world_aws.now()"),
    "datetime_now": (lambda: datetime.datetime.now(), "world_aws.now()"),
    "datetime_now_utc": (lambda: datetime.datetime.now(datetime.UTC), "world_aws.now()"),
    "datetime_utcnow": (lambda: datetime.datetime.utcnow(), "world_aws.now()"),
    "date_today": (lambda: datetime.date.today(), "world_aws.now().date()"),
    "random_random": (lambda: random.random(), "world_aws.random()"),
    "random_randint": (lambda: random.randint(1, 6), "world_aws.random()"),
    "random_choice": (lambda: random.choice("abc"), "world_aws.random()"),
    "uuid_uuid4": (lambda: uuid.uuid4(), "world_aws.uuid4()"),
    "os_urandom": (lambda: os.urandom(8), "do this in a step"),
    "thread_start": (lambda: threading.Thread(target=int).start(), "do this in a step"),
    "time_sleep": (lambda: time.sleep(0.001), "world_aws.sleep"),
    "socket_socket": (lambda: socket.socket().close(), "do this in a step"),
}


@app.step
def in_a_step(name: str) -> str:
    CALLS[name][0]()  # every refused call is fine in a step
    return "ok"


def _workflow(name: str) -> None:
    async def body() -> str:
        await in_a_step(name)
        CALLS[name][0]()
        return "unreachable"

    body.__name__ = body.__qualname__ = name
    app.workflow(body)


for _name in CALLS:
    _workflow(_name)


@app.workflow
async def to_thread() -> None:
    await asyncio.to_thread(int)


@app.workflow
async def allowed() -> list[Any]:
    logging.getLogger(__name__).info("logging reads the clock: allowed")
    seeded = random.Random(7).randint(1, 100)
    return [seeded, world_aws.now().year > 2000, 0 <= world_aws.random() < 1, world_aws.uuid4().version]
