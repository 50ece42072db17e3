"""Where a fork starts again, and the events it copies from the run it forks (pure functions).

A fork (``client/forks.py``) is a new run of an ended run's workflow and input whose
log begins with a copy of part of the original's, up to a position, the *fork point*.
Replay serves the copied steps' recorded results; the code takes over from there. The
fork point is, for ``from_step``:

* a step name (``"charge"``): the first call of that step, its ``step_created``;
* ``"name#n"``: the n-th call of it (1-based, in the order the log created them);
* none, for a failed run: the ``step_failed`` of the step whose failure ended the run
  (a ``StepFailedError`` in the run's error or its causes), so that step runs again;
  a run that failed in its workflow code (no step failure in its error) keeps its
  whole log, and the fork replays all of it on the current code;
* none, for a cancelled run: its whole log (what was in flight runs again).

A completed run has no default: its fork needs ``from_step``.

What is copied (README "Recovering runs"), in the original's order:

* before the point: the events of every step with an outcome before it (a step caught
  failing by the workflow too), every hook and wait, every child call whose outcome is
  before it, and every ``patched()`` decision (``patch_applied``: the fork's code takes
  the branch its copied history took);
* after it: what settled, independently of the point, something made before it: a
  sibling step's completion (with its starts and retries), a hook's payload, a wait
  that came due. Not a failure (the workflow never handled it), not a child's outcome
  (it may be one), not a disposal or a create (the workflow's own moves after the point);
* never: the step at the point, a step without a completion, a child without an outcome
  (the fork calls them again: a child so runs as the fork's own), run events, sealed
  positions (``noop``), and anything after a ``hook_conflict`` (that hook's create would
  not meet the same token holder again).

A copy drops the step events' inline owner (a delivery of the original) and
``retry_after`` (its retries are history), and writes an inline step's first
``step_created`` as ``step_created`` + ``step_started``. A wait keeps its
``resume_at``: an elapsed sleep is not slept again, one still running ends when it
would have. A hook keeps its token and its payloads their resume ids. Correlation ids
name the fork (``step_<fork ulid>_<n>``), as its replay generates them
(``engine/ids.py``); a child call's hook names the fork's child, as the replay expects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    HookCreatedData,
    HookReceivedData,
    Run,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
)
from world_aws.engine.children import child_of_token, child_run_id, child_token
from world_aws.errors import BadInput, Conflict, NotFound, SerializationError
from world_aws.serde.errors import ErrorInfo, decode_error

CHILD_CALL_PREFIX = "child_"
_STEP_FAILED_TYPE = "StepFailedError"
_OUTCOMES = (EventType.STEP_COMPLETED, EventType.STEP_FAILED)


def fork_point(run: Run, events: list[Event], from_step: str | None) -> int:
    """The position the fork of ``run`` starts again at (see the module docstring).

    Args:
        run: the run forked, read with its error.
        events: its log (payloads not needed).
        from_step: a step name, ``name#n``, or None for the default.

    Raises:
        Conflict: the run has not ended (a fork beside it would run the same steps).
        NotFound: the log has no such step (or not that many calls of it).
        BadInput: a malformed ``from_step``, or no ``from_step`` for a completed run.
    """
    if not run.status.terminal:
        raise Conflict(
            f"run {run.run_id} is {run.status.value}: only an ended run can be forked "
            "(cancel it first; its fork then starts again where it stopped)"
        )
    if from_step is not None:
        return _step_point(run.run_id, events, from_step)
    end = next((e.position for e in events if e.type.terminates_run), len(events) + 1)
    if run.status is RunStatus.COMPLETED:
        raise BadInput(f"run {run.run_id} completed: name the step to fork it from (from_step)")
    if run.status is RunStatus.FAILED:
        failed = _failed_step(run, events, end)
        if failed is not None:
            return failed
    return end


def _step_point(run_id: str, events: list[Event], from_step: str) -> int:
    name, sep, nth = from_step.rpartition("#")
    if not sep:
        name, nth = from_step, ""
    if not name or (sep and not (nth.isdigit() and int(nth) >= 1)):
        raise BadInput(f"from_step: expected a step name or 'name#n' (n from 1), got {from_step[:80]!r}")
    wanted = int(nth) if nth else 1
    name = _full_name(name, step_names(events).values())
    calls = [e.position for e in events if isinstance(e.data, StepCreatedData) and e.data.step_name == name]
    if len(calls) < wanted:
        held = f" (it calls it {len(calls)} time{'s' if len(calls) != 1 else ''})" if calls else ""
        raise NotFound(f"run {run_id} has no step {from_step!r}{held}")
    return calls[wanted - 1]


def _full_name(name: str, logged: Iterable[str]) -> str:
    """``name`` as the log names it: itself, or the one logged name it is the last part of.

    A step's default name is its function's qualified name (``shop.charge``); a user
    may give ``charge``.
    """
    known = set(logged)
    if name in known:
        return name
    matches = sorted(n for n in known if n.rsplit(".", 1)[-1] == name)
    if len(matches) > 1:
        raise BadInput(f"from_step: {name!r} names several steps: {', '.join(matches)}")
    return matches[0] if matches else name


def _failed_step(run: Run, events: list[Event], end: int) -> int | None:
    """The position of the ``step_failed`` that ended ``run``, if a step's failure did."""
    try:
        info: ErrorInfo | None = decode_error(run.error or b"")
    except SerializationError:
        return None
    names = step_names(events)
    while info is not None:
        if info.type.rsplit(".", 1)[-1] == _STEP_FAILED_TYPE:
            failures = [
                e.position
                for e in events
                if e.type is EventType.STEP_FAILED
                and e.position < end
                and info.message.startswith(f"step {names.get(e.correlation_id or '')!r} failed: ")
            ]
            if failures:
                return failures[-1]
        info = info.cause
    return None


def step_names(events: list[Event]) -> dict[str, str]:
    """correlation id → step name, from the log's ``step_created`` events."""
    return {e.correlation_id or "": e.data.step_name for e in events if isinstance(e.data, StepCreatedData)}


def copy_plan(events: list[Event], point: int, source_id: str, fork_id: str) -> list[EventRequest]:
    """The events the fork of ``source_id`` as ``fork_id`` starts with, in order (module docstring).

    Args:
        events: the source's log, with payloads.
        point: the fork point (``fork_point``).
        source_id: the run forked.
        fork_id: the fork.
    """
    conflict = next((e.position for e in events if e.type is EventType.HOOK_CONFLICT), None)
    point = min(point, conflict) if conflict is not None else point
    before = [e for e in events if e.position < point]
    at = next((e for e in events if e.position == point), None)
    again = at.correlation_id if at is not None and at.type.is_step_event else None
    made = {e.correlation_id for e in before if e.type.creates_entity}
    # What settled after the point, of what was made before it and independently of it: a
    # sibling's result, a hook's payload, a wait that came due. Not a failure (the workflow
    # never handled it), a disposal or a create (the workflow's own moves after the point).
    later = [
        e
        for e in events
        if e.position > point
        and e.correlation_id in made
        and e.correlation_id != again
        and e.type in _LATER
        # A child's outcome may be a failure, which only the app's serializer could tell.
        and not (e.correlation_id or "").startswith(CHILD_CALL_PREFIX)
    ]
    completed_later = {e.correlation_id for e in later if e.type is EventType.STEP_COMPLETED}
    # A step's events after the point are copied only if it completed then.
    copied = before + [e for e in later if not e.type.is_step_event or e.correlation_id in completed_later]
    settled = {e.correlation_id for e in before if e.type in _OUTCOMES} | completed_later
    settled.discard(again)
    children_settled = {
        e.correlation_id
        for e in copied
        if e.type is EventType.HOOK_RECEIVED and (e.correlation_id or "").startswith(CHILD_CALL_PREFIX)
    }
    names = step_names(before)
    ids = _Ids(source_id, fork_id)
    plan: list[EventRequest] = []
    for event in copied:
        cid = event.correlation_id or ""
        if event.type.is_run_event or event.type is EventType.NOOP:
            continue
        if event.type.is_step_event and cid not in settled:
            continue
        if cid.startswith(CHILD_CALL_PREFIX) and cid not in children_settled:
            continue
        plan.extend(_copies(event, ids.of(cid), names.get(cid, ""), fork_id))
    return plan


# The events after the fork point that may settle what was made before it.
_LATER = frozenset(
    {
        EventType.STEP_STARTED,
        EventType.STEP_RETRYING,
        EventType.STEP_COMPLETED,
        EventType.HOOK_RECEIVED,
        EventType.WAIT_COMPLETED,
    }
)


def copied_count(plan: list[EventRequest], log: list[Event]) -> int:
    """How many of ``plan``'s requests ``log`` (the fork's) already holds, in order.

    The copy is written in plan order, so the fork's log holds a prefix of the plan
    among its other events (its run events, sealed positions, a hook's payload resumed
    during the copy, a start written twice by two copiers). A ``hook_created`` whose
    token another run held came back as ``hook_conflict``: that is its copy.
    """
    done = 0
    for event in log:
        if done == len(plan):
            break
        want = plan[done]
        same_type = event.type is want.type or (
            event.type is EventType.HOOK_CONFLICT and want.type is EventType.HOOK_CREATED
        )
        if same_type and event.correlation_id == want.correlation_id:
            done += 1
    return done


class _Ids:
    """The fork's correlation id for each of the source's (``kind_<ulid>_<n>``), and back."""

    def __init__(self, source_id: str, fork_id: str) -> None:
        self._source = source_id.split("_", 1)[-1]
        self._fork = fork_id.split("_", 1)[-1]

    def of(self, cid: str) -> str:
        return _swap(cid, self._source, self._fork)

    def back(self, cid: str) -> str:
        return _swap(cid, self._fork, self._source)


def _swap(cid: str, old: str, new: str) -> str:
    kind, _, rest = cid.partition("_")
    if rest.startswith(f"{old}_"):
        return f"{kind}_{new}{rest[len(old) :]}"
    return cid  # not one this run minted: kept as it is


def reused_child(fork_id: str, source_id: str, call_id: str) -> str:
    """The original's child run whose outcome a fork's copied child call ``call_id`` reuses."""
    return child_run_id(source_id, _Ids(source_id, fork_id).back(call_id))


def _copies(event: Event, cid: str, name: str, fork_id: str) -> list[EventRequest]:
    """The fork's requests for one copied event of the source."""
    data = event.data
    if isinstance(data, StepCreatedData):
        created = EventRequest(
            EventType.STEP_CREATED, cid, replace(data, owner=None, via_step_dispatch=False)
        )
        if data.owner is None:
            return [created]
        # An inline step's create was its first start too: written as the two it stands for.
        return [created, EventRequest(EventType.STEP_STARTED, cid, StepStartedData(step_name=name))]
    if isinstance(data, StepStartedData):
        return [EventRequest(EventType.STEP_STARTED, cid, StepStartedData(step_name=name))]
    if isinstance(data, StepRetryingData):
        return [EventRequest(event.type, cid, replace(data, owner=None, retry_after=None))]
    if isinstance(data, StepCompletedData | StepFailedData):
        return [EventRequest(event.type, cid, replace(data, owner=None))]
    if isinstance(data, HookCreatedData) and child_of_token(data.token) is not None:
        # The token the fork's replay expects for this call: its own child's.
        return [EventRequest(event.type, cid, replace(data, token=child_token(child_run_id(fork_id, cid))))]
    if isinstance(data, HookReceivedData):
        token = data.token
        if token is not None and child_of_token(token) is not None:
            token = child_token(child_run_id(fork_id, cid))
        # A resume without an id gets one, so that a copy written twice is recorded once.
        resume_id = data.resume_id or f"fork_{event.position}"
        return [EventRequest(event.type, cid, replace(data, token=token, resume_id=resume_id))]
    return [EventRequest(event.type, cid, data)]
