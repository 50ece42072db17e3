"""``patched()`` and ``deprecated_patch()``: move runs in flight onto changed workflow code.

A run replays its log on whatever code the function has now. When a deploy changes
what a workflow does at some point, a run that passed that point on the old code
must keep replaying the old branch, and a run that reaches it on the new code must
take the new one, on every later replay too. ``patched("change-id")`` decides which,
and the decision is a fact of the run's log (a ``patch_applied`` event), as in
Temporal's ``workflow.patched`` and DBOS's ``DBOS.patch``:

* the log already records the change (a ``patch_applied`` of it): True;
* the log holds work the code has not reached yet at this call (a step, hook, wait
  or child call with a later id, or the run's end): the run went past this point on
  code without the change. False, and nothing is recorded, so every replay agrees;
* otherwise the run reaches this point now, on this code: True, and the
  continuation records ``patch_applied`` before anything the new branch writes
  (``Orchestrator`` writes a replay's unrecorded decisions first), so a later replay
  finds the marker even when other events (a hook's payload) land meanwhile.

A decision is taken once per change and run (a second call of the same change id
returns the first answer). ``deprecated_patch("change-id")`` is the clean-up once no
run is left that predates the change: the code takes the new branch always, records
nothing, and a log that holds the change's marker still replays (the replay reads a
marker only when the code asks). README "Deploying changes" shows the three steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    PatchAppliedData,
    change_id_error,
    patch_correlation_id,
)
from world_aws.errors import BadInput
from world_aws.workflow import context

# The log events that end a run by the workflow's own hand: a log that has one went
# past every point of the code.
_CODE_ENDS = frozenset({EventType.RUN_COMPLETED, EventType.RUN_FAILED})
# The id prefixes of the calls the code makes (``ids.correlation_id``): child calls
# count on their own counter ("child"), recorded as hooks.
_KINDS = ("step", "hook", "wait", "child")


@dataclass(slots=True)
class PatchBook:
    """One replay's patch decisions and what its log says about them.

    ``add`` is given every event the replay is fed (before the code runs on it), so
    ``decide`` sees the whole log known so far: what the code has not reached yet
    included.
    """

    marked: set[str] = field(default_factory=set)  # change ids with a patch_applied in the log
    furthest: dict[str, int] = field(default_factory=dict)  # per kind, the highest call number logged
    ended: bool = False  # the log has the run's end
    decisions: dict[str, bool] = field(default_factory=dict)
    unrecorded: list[str] = field(default_factory=list)  # decided True here, not yet in the log

    def add(self, event: Event) -> None:
        if isinstance(event.data, PatchAppliedData):
            self.marked.add(event.data.change_id)
            if event.data.change_id in self.unrecorded:
                self.unrecorded.remove(event.data.change_id)
        elif event.type in _CODE_ENDS:
            self.ended = True
        elif event.type.creates_entity or event.type is EventType.HOOK_CONFLICT:
            kind, number = _call_number(event.correlation_id or "")
            if kind is not None and number > self.furthest.get(kind, 0):
                self.furthest[kind] = number

    def decide(self, change_id: str, counters: dict[str, int]) -> bool:
        """The decision of ``change_id`` for code that has made ``counters`` calls of each kind."""
        problem = change_id_error(change_id)
        if problem is not None:
            raise BadInput(f"patched({change_id!r}): {problem}")
        decided = self.decisions.get(change_id)
        if decided is not None:
            return decided
        if change_id in self.marked:
            decided = True
        elif self.ended or any(self.furthest.get(kind, 0) > counters.get(kind, 0) for kind in _KINDS):
            decided = False  # the log went past this point without the change
        else:
            decided = True
            self.unrecorded.append(change_id)
        self.decisions[change_id] = decided
        return decided

    def recorded(self, change_ids: list[str]) -> None:
        """``change_ids``' markers were written (their events reach ``add`` with the next read)."""
        self.marked.update(change_ids)
        self.unrecorded[:] = [c for c in self.unrecorded if c not in self.marked]


def patch_marker(change_id: str) -> EventRequest:
    """The ``patch_applied`` that records the decision of ``change_id``."""
    return EventRequest(
        EventType.PATCH_APPLIED, patch_correlation_id(change_id), PatchAppliedData(change_id=change_id)
    )


def _call_number(correlation_id: str) -> tuple[str | None, int]:
    """``("step", 3)`` for ``step_<run ulid>_3``; ``(None, 0)`` for an id of no code call."""
    kind, _, rest = correlation_id.partition("_")
    number = rest.rpartition("_")[2]
    if kind not in _KINDS or not number.isdigit():
        return None, 0
    return kind, int(number)


def patched(change_id: str) -> bool:
    """Whether this run takes the new branch of the change ``change_id``.

    True for a run that reaches this point on code that has the change; False when
    replaying a run whose log went past this point before the change was deployed.
    The decision is recorded in the run's log, so every later replay takes the same
    branch. Use it around the code a deploy changes::

        if patched("charge-in-cents"):
            receipt = await charge_cents(order_id, cents)
        else:
            receipt = await charge(order_id, cents / 100)

    Raises:
        BadInput: ``change_id`` is empty, longer than 200 characters or has spaces.
        RuntimeError: called outside a workflow.
    """
    replay = context.current_replay()
    if replay is None:
        raise RuntimeError("patched() can only be used inside a workflow")
    return replay.patched(change_id)


def deprecated_patch(change_id: str) -> None:
    """Mark where ``patched(change_id)`` was, once no run that predates the change is left.

    The code takes the new branch unconditionally and records nothing; runs whose
    log holds the change's marker still replay. Remove the call once no run that
    went through ``patched(change_id)`` is left either.

    Raises:
        BadInput: ``change_id`` is not a valid change id.
        RuntimeError: called outside a workflow.
    """
    if context.current_replay() is None:
        raise RuntimeError("deprecated_patch() can only be used inside a workflow")
    problem = change_id_error(change_id)
    if problem is not None:
        raise BadInput(f"deprecated_patch({change_id!r}): {problem}")
