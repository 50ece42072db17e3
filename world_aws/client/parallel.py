"""Running a batch of independent World calls on a thread pool, each failure kept as its result."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any


def run_parallel(pool: Executor, calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """Run ``calls`` on ``pool``; each result is the return value or the exception raised."""
    if not calls:
        return []
    # The calling thread runs the first call itself: one hand-off fewer per batch. The others
    # run in a copy of its context, so a publish carries the current span (observe/tracing.py).
    futures = [pool.submit(contextvars.copy_context().run, _capture, call) for call in calls[1:]]
    first = _capture(calls[0])
    return [first, *(f.result() for f in futures)]


def _capture(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        return exc
