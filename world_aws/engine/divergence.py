"""Where a replay left its log: the position, what the log has there and what the code does.

A ``Replay`` that finds the code no longer matching the run's log (contract §8.3) fails
the run with ``NON_DETERMINISM``; it also keeps this record of the first mismatch,
which the replay gate (``world-aws replay``, ``WorkflowKit.replay``) prints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first point where the code and the log part.

    Attributes:
        position: the log position of what the log has there (None: no event of it,
            e.g. a call the guard refused, at ``at_position``).
        correlation_id: the step, hook or wait id the two disagree on (None: none).
        logged: what the log has there, e.g. ``step 'charge'`` (None: nothing).
        called: what the code does there, e.g. ``step 'charge_cents'``.
        message: the non-determinism error's message.
    """

    position: int | None
    correlation_id: str | None
    logged: str | None
    called: str
    message: str

    def describe(self) -> str:
        """``at position 7 (step_..._2): the log has step 'ship' but the code calls step 'wrap'``."""
        where = f"at position {self.position}" if self.position is not None else "in the code"
        if self.correlation_id:
            where += f" ({self.correlation_id})"
        if self.logged is None:
            return f"{where}: {self.called}"
        return f"{where}: the log has {self.logged} but the code {self.called}"
