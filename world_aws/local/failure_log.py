"""Failures logged as they are recorded: one line (and the traceback) per failed step attempt or run.

``FailureLog`` wraps a World's event store; each ``step_retrying``, ``step_failed``
and ``run_failed`` it appends is also logged (INFO) to the ``world_aws.failures``
logger, with the error's traceback. ``world-aws dev`` shows that logger beside its
access log, so the person at the terminal sees why a step failed as it happens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from world_aws.contract.records import (
    ErrorData,
    Event,
    EventRequest,
    EventResult,
    ResolveData,
    RunLog,
)
from world_aws.contract.world import EventStore, ForwardingWorld, World
from world_aws.errors import SerializationError
from world_aws.serde.codec import decode_error

LOG = logging.getLogger("world_aws.failures")


class FailureLog(ForwardingWorld):
    """``inner`` with its failures logged (see the module docstring)."""

    def __init__(self, inner: World) -> None:
        super().__init__(inner)
        self.events = _LoggedEvents(inner.events)


class _LoggedEvents:
    def __init__(self, inner: EventStore) -> None:
        self._inner = inner

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        result = self._inner.create(run_id, request)
        _log_failure(run_id, request)
        return result

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> list[EventResult] | None:
        results = self._inner.append_after(run_id, after, requests, at=at, flush_later=flush_later)
        for request in requests if results is not None else ():
            _log_failure(run_id, request)
        return results

    def flush(self, run_id: str) -> None:
        self._inner.flush(run_id)

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        return self._inner.list(run_id, after=after, resolve_data=resolve_data)

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        return self._inner.list_with_run(run_id, after=after, resolve_data=resolve_data)


def _log_failure(run_id: str, request: EventRequest) -> None:
    data = request.data
    if not isinstance(data, ErrorData) or not data.error:
        return
    try:
        info = decode_error(data.error)
    except SerializationError:
        return
    innermost = info
    while innermost.cause is not None:
        innermost = innermost.cause  # a run failed by a step: the step's traceback, the user's frames
    what = request.type.value + (f" {request.correlation_id}" if request.correlation_id else "")
    stack = "\n" + innermost.stack.rstrip("\n") if innermost.stack else ""
    LOG.info("%s of run %s: %s: %s%s", what, run_id, info.type, info.message, stack)
