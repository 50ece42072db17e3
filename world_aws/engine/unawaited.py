"""A step or child call the workflow never awaited: found when the workflow ends, and reported.

``charge(order)`` without ``await`` in a workflow makes the call (a future) and drops it: the
workflow goes on at once, the step's result is lost, and a run that returns then would complete
as though the step never existed. Each call the replay hands to workflow code is a
:class:`CallFuture`, which notes when something takes it: an ``await``, or a done callback, which
is how ``asyncio.gather``, ``asyncio.wait``, ``asyncio.wait_for``, ``asyncio.shield`` and
``asyncio.as_completed`` take the futures they are given (so those calls are fine).

When the workflow ends, each call nothing took is logged as a warning naming the step (or child
workflow) and its correlation id. A workflow that *returns* with such a call fails its run with
``UNAWAITED_CALL`` (:class:`UnawaitedCallError`), on every replay alike; one that raises keeps
its own error. A call still untaken while the run is suspended is not reported: the workflow may
await it after a sleep or a hook.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from contextvars import Context
from typing import Any

from world_aws.errors import UnawaitedCallError

LOG = logging.getLogger("world_aws.runtime")  # the name users configure; kept across the package split
ERROR_CODE_UNAWAITED_CALL = "UNAWAITED_CALL"


class CallFuture(asyncio.Future[Any]):
    """The future of a step or child call, which remembers whether workflow code took it."""

    taken = False

    def __await__(self) -> Any:
        self.taken = True
        return super().__await__()

    __iter__ = __await__

    def add_done_callback(self, fn: Callable[[Any], object], *, context: Context | None = None) -> None:
        self.taken = True
        super().add_done_callback(fn, context=context)


def untaken(calls: Iterable[tuple[str, str, asyncio.Future[Any]]]) -> list[tuple[str, str]]:
    """``(correlation id, name)`` of the calls whose future workflow code never took."""
    return [(cid, name) for cid, name, future in calls if isinstance(future, CallFuture) and not future.taken]


def report(workflow: str, run_id: str, dropped: list[tuple[str, str]]) -> UnawaitedCallError:
    """Log each dropped call as a warning; the error that fails a run that returned with them."""
    for cid, name in dropped:
        LOG.warning(
            "workflow %r (run %s) called %r (%s) without awaiting it: its result is lost; "
            "await it, or pass it to asyncio.gather",
            workflow,
            run_id,
            name,
            cid,
        )
    names = ", ".join(f"{name!r} ({cid})" for cid, name in dropped)
    return UnawaitedCallError(
        f"workflow {workflow!r} returned without awaiting {names}: "
        "await each step and child call, or pass it to asyncio.gather"
    )
