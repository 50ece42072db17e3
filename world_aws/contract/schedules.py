"""The schedule store: where the scheduler remembers, per schedule, the last tick it handled.

One small record per schedule (``ScheduleState``), replaced only by a
compare-and-set on its ``last_tick`` (``advance``), so that two scheduler passes
that overlap cannot move a schedule backwards. The runs a tick starts are not
kept here: a tick's run id is derived from the schedule and the tick
(``world_aws.worker.scheduler``), which is what makes a tick start one run even
when two passes handle it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class ScheduleState:
    """What the scheduler knows of one schedule.

    Attributes:
        name: the schedule's name (unique per app).
        last_tick: the latest tick handled: started, skipped (overlap) or dropped
            (catch-up); no tick at or before it is ever started again.
        last_run_id: the run of the latest tick started, if any (the overlap check).
        started: ticks started so far.
        skipped: ticks skipped because the previous tick's run was still going.
        missed: due ticks dropped by the catch-up bound after a gap in the passes.
        updated_at: when the record was last written.
    """

    name: str
    last_tick: datetime
    last_run_id: str | None = None
    started: int = 0
    skipped: int = 0
    missed: int = 0
    updated_at: datetime | None = None


class ScheduleStore(Protocol):
    def get(self, name: str) -> ScheduleState | None:
        """The state of schedule ``name``, or ``None`` if the scheduler never handled it."""
        ...

    def advance(self, state: ScheduleState, *, expected_tick: datetime | None) -> bool:
        """Replace the state of ``state.name`` if its stored ``last_tick`` is ``expected_tick``.

        ``expected_tick=None`` means "no state stored yet". Linearizable: of two
        passes that read the same state and advance it, exactly one succeeds.

        Returns:
            ``True`` if written; ``False`` if the stored state had moved (nothing written).
        """
        ...
