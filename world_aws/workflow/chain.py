"""Continue-as-new and the events-per-run bound: keeping a long-lived loop's log bounded.

``continue_as_new(*args, **kwargs)`` inside a workflow ends the run and starts a
fresh run of the same workflow with those arguments. The ended run is
``completed`` and its output is a :class:`ContinuedAsNew` link naming the next
run: no new terminal status, so the World contract (contract §2.1), the terminal-run
fence and every reader of run statuses stay as they are, and
``RunHandle.result()`` follows the links to the last run's result. The next run
id is derived from the ended run's id, so a redone continuation starts it once
(an idempotent create); it keeps the root (``$root_run_id``), names the run it
continues (``$continued_from``), and inherits a child's link to its parent, so
the parent is told only when the last run of the chain ends.

The bound: a continuation that finds more than ``max_events_per_run`` events in
its run's log (``WORKFLOW_MAX_EVENTS_PER_RUN``, default 50,000: about 16,000
steps) fails the run with ``EVENT_LIMIT_EXCEEDED`` instead of letting every cold
replay grow slower.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from world_aws.errors import WorldAwsError
from world_aws.workflow import context

CONTINUED_FROM = "$continued_from"
ERROR_CODE_EVENT_LIMIT = "EVENT_LIMIT_EXCEEDED"
# The stable serializer name of the link, registered on every app's serializer.
CONTINUED_AS_NEW_TYPE = "world_aws:ContinuedAsNew"


class ContinueAsNew(BaseException):
    """Raised by ``continue_as_new`` to end the workflow; a ``BaseException`` so user code cannot catch it."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("continue_as_new")
        self.call_args = args
        self.call_kwargs = kwargs


@dataclass(frozen=True, slots=True)
class ContinuedAsNew:
    """The output of a run that continued as new: the run that carries on."""

    run_id: str


class EventLimitExceeded(WorldAwsError):
    """A run's log grew past ``WORKFLOW_MAX_EVENTS_PER_RUN``; the run fails with ``EVENT_LIMIT_EXCEEDED``."""

    def __init__(self, run_id: str, events: int, limit: int) -> None:
        super().__init__(
            f"run {run_id} has {events} events, over the limit of {limit} per run "
            f"(WORKFLOW_MAX_EVENTS_PER_RUN): end a long-lived loop with world_aws.continue_as_new(...)"
        )


def continue_as_new(*args: Any, **kwargs: Any) -> NoReturn:
    """End this run and start a fresh run of the same workflow with ``args`` and ``kwargs``.

    Raises:
        RuntimeError: outside a workflow.
    """
    if context.current_replay() is None:
        raise RuntimeError("continue_as_new() can only be used inside a workflow")
    raise ContinueAsNew(args, dict(kwargs))
