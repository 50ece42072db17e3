"""``RunHandle``: a client's view of one run — status, result, events, cancellation."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from world_aws.client.audit import LOCAL_ACTOR, check_actor
from world_aws.client.lineage import Lineage
from world_aws.client.stream_reader import StreamCursor, follow_async
from world_aws.contract.records import Event, ResolveData, Run, RunStatus
from world_aws.contract.streams import DEFAULT_STREAM
from world_aws.contract.world import World
from world_aws.errors import NotFound, ResultTimeout, RunCancelledError, WorkflowFailedError
from world_aws.serde.codec import Serializer, decode_error
from world_aws.workflow.chain import ContinuedAsNew

POLL_MIN_SECONDS = 0.02
POLL_MAX_SECONDS = 0.5


class RunHandle:
    def __init__(
        self,
        world: World,
        serializer: Serializer,
        run_id: str,
        *,
        started: bool = False,
        ended: Callable[[Run], None] | None = None,
    ) -> None:
        """``started``: the run was started (by ``start()``, or as a chain's next run), so a
        read that does not find it finds it still to come: its ``run_created`` may have failed,
        and its first message creates it (resilient start, contract §6.1). ``ended``: called
        with each run a ``cancel`` ends (the client's: it gives the run's slot back)."""
        self._world = world
        self._serializer = serializer
        self.run_id = run_id
        self._started = started
        self._ended = ended

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"

    def run(self, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        return self._world.runs.get(self.run_id, resolve_data=resolve_data)

    def status(self) -> RunStatus:
        return self.run(resolve_data=ResolveData.NONE).status

    def events(self, *, resolve_data: ResolveData = ResolveData.NONE) -> list[Event]:
        """The run's log as records (position, type, correlation id, created_at, data)."""
        return self._world.events.list(self.run_id, resolve_data=resolve_data)

    def wait(self, timeout: float | None = None) -> Run:
        """Block (real time) until the run is terminal; returns it with payloads.

        Raises:
            ResultTimeout: ``timeout`` seconds passed first.
            NotFound: no such run (a handle that ``start()`` did not return).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interval = POLL_MIN_SECONDS
        while True:
            try:
                status = self.run(resolve_data=ResolveData.NONE).status
            except NotFound:
                if not self._started:
                    raise
                status = RunStatus.PENDING  # its first message has not created it yet
            if status.terminal:
                return self.run()
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise ResultTimeout(f"run {self.run_id} is still {status.value} after {timeout}s")
            # Woken the moment this process records the end (World.ends); a run ended by
            # another process is seen by the next read, up to POLL_MAX_SECONDS later.
            if self._world.ends.wait(self.run_id, interval if left is None else min(interval, left)):
                continue
            interval = min(POLL_MAX_SECONDS, interval * 1.5)

    def result(self, timeout: float | None = None) -> Any:
        """The workflow's return value, once the run ends.

        Raises:
            WorkflowFailedError: the run failed (type, message and error code kept).
            RunCancelledError: the run was cancelled.
            ResultTimeout: ``timeout`` seconds passed first.
        """
        return self.outcome_of(self.wait(timeout), timeout)

    def outcome_of(self, run: Run, timeout: float | None = None) -> Any:
        """The value of ``run`` ended (of the last run of its chain, if it continued as new)."""
        if run.status is RunStatus.COMPLETED:
            value = self._serializer.loads(run.output or b"")
            if isinstance(value, ContinuedAsNew):  # follow the chain to its last run
                chained = RunHandle(
                    self._world, self._serializer, value.run_id, started=True, ended=self._ended
                )
                return chained.result(timeout)
            return value
        if run.status is RunStatus.CANCELLED:
            raise RunCancelledError(self.run_id)
        info = decode_error(run.error or b"")
        raise WorkflowFailedError(self.run_id, info.type, info.message, run.error_code)

    def cancel(self, reason: str | None = None, *, actor: str = LOCAL_ACTOR) -> bool:
        """Cancel the run and its child runs; False if it had already ended.

        ``actor``: who cancels, recorded on ``run_cancelled`` (audit): the API passes the
        caller's IAM ARN; in process it is ``"local"``.

        Raises:
            WorldAwsError: a write failed; call again (a retry finishes what is left).
        """
        lineage = Lineage(self._world, self._serializer, ended=self._ended)
        return lineage.cancel(self.run_id, reason, actor=check_actor(actor))

    def readable(
        self,
        name: str = DEFAULT_STREAM,
        start_index: int = 0,
        *,
        pause: Callable[[float], None] | None = None,
    ) -> AsyncIterator[Any]:
        """The values of the run's stream ``name`` in order, from index ``start_index``.

        ``async for value in handle.readable():`` yields each value once, as the run's
        steps write them, and ends when the stream is closed or the run has ended.

        Args:
            name: the stream (``get_writable(name)`` in a step).
            start_index: the index of the first value wanted (the count already read).
            pause: called with seconds between polls that found nothing (default: the
                World clock's ``sleep``).

        Raises:
            BadInput: a bad name or a negative ``start_index``.
        """
        cursor = StreamCursor(self._world, self._serializer, self.run_id, name, start_index)
        return follow_async(cursor, pause)

    def stream_cursor(self, name: str = DEFAULT_STREAM, start_index: int = 0) -> StreamCursor:
        """A cursor on stream ``name`` for polling it yourself (``poll()``, ``ended()``)."""
        return StreamCursor(self._world, self._serializer, self.run_id, name, start_index)
