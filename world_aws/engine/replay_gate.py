"""The replay gate: replay recorded runs against the code about to be deployed.

A deploy that changes what a workflow does at a point a run in flight has already
passed fails that run with ``NON_DETERMINISM`` at its next continuation. The gate
finds it before the deploy: each exported run (``contract.log_export``) is replayed
cold on the local code with the replay engine the runtime uses (``Replay``), and
any run whose log the code no longer matches is reported with where it parts: the
position, what the log has there and what the code does instead. A run the code
replays to its end, or up to where its log stops (a run in flight), is ``ok``; a
run the workflow ended (completed, or failed by its own error) where the code
calls something more diverges at its end.
Nothing is written anywhere: steps do not run (their recorded results are replayed),
and ``patched()`` decides as it would, recording nothing.

``world-aws replay`` (``cli/replay.py``) and ``WorkflowKit.replay`` run it.
"""

from __future__ import annotations

from dataclasses import dataclass

from world_aws.contract.log_export import ExportedRun
from world_aws.contract.records import EventType
from world_aws.engine.divergence import Divergence
from world_aws.engine.replay import (
    ERROR_CODE_BAD_INPUT,
    ERROR_CODE_NON_DETERMINISM,
    ERROR_CODE_USER,
    Completed,
    Continued,
    Failed,
    Replay,
    Suspended,
)
from world_aws.errors import UnknownWorkflow
from world_aws.serde.codec import decode_error
from world_aws.workflow.registry import Workflows


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """What the gate found for one run.

    Attributes:
        run_id, workflow_name, status: the recorded run (``status`` as exported).
        events: how many events its log has.
        reached: where the replay got: ``completed``, ``failed``, ``continued`` or
            ``waiting`` (the log stops there: a run in flight).
        divergence: where the code parts from the log; None when it does not.
    """

    run_id: str
    workflow_name: str
    status: str
    events: int
    reached: str
    divergence: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None

    def line(self) -> str:
        """One line for a terminal: ``ok`` or ``DIVERGED`` with where."""
        if self.divergence is None:
            return f"ok        {self.run_id}  {self.workflow_name} ({self.status}, {self.events} events)"
        return f"DIVERGED  {self.run_id}  {self.workflow_name}: {self.divergence.describe()}"


def replay_run(app: Workflows, exported: ExportedRun) -> RunVerdict:
    """Replay one exported run cold on ``app``'s code."""
    run = exported.run
    verdict = _Verdict(run.run_id, run.workflow_name, run.status.value, len(exported.events))
    try:
        workflow = app.get_workflow(run.workflow_name)
    except UnknownWorkflow:
        called = f"has no workflow {run.workflow_name!r}"
        return verdict.of("failed", Divergence(1, None, f"a run of {run.workflow_name!r}", called, called))
    replay = Replay(run, workflow, app.serializer)
    try:
        replay.feed(exported.events)
        outcome = replay.outcome()
        divergence = replay.divergence
    finally:
        replay.close()
    if (
        isinstance(outcome, Failed)
        and outcome.error_code == ERROR_CODE_NON_DETERMINISM
        and divergence is None
    ):
        message = decode_error(outcome.error).message
        divergence = Divergence(None, None, None, message, message)
    if divergence is None and isinstance(outcome, Suspended):
        divergence = _past_the_end(exported, outcome)
    if isinstance(outcome, Failed) and outcome.error_code == ERROR_CODE_BAD_INPUT:
        message = decode_error(outcome.error).message
        called = f"does not take the run's input: {message}"
        divergence = divergence or Divergence(1, None, "the run's input", called, message)
    return verdict.of(_reached(outcome), divergence)


def replay_runs(app: Workflows, runs: list[ExportedRun]) -> list[RunVerdict]:
    """:func:`replay_run` of each run, in order."""
    return [replay_run(app, exported) for exported in runs]


@dataclass(frozen=True, slots=True)
class _Verdict:
    run_id: str
    workflow_name: str
    status: str
    events: int

    def of(self, reached: str, divergence: Divergence | None) -> RunVerdict:
        return RunVerdict(self.run_id, self.workflow_name, self.status, self.events, reached, divergence)


def _past_the_end(exported: ExportedRun, outcome: Suspended) -> Divergence | None:
    """A run the workflow ended (completed, or failed by its own error) that the code does not end:
    where the log has the end, the code calls more."""
    ends = [e for e in exported.events if e.type in (EventType.RUN_COMPLETED, EventType.RUN_FAILED)]
    if not ends or exported.run.error_code not in (None, ERROR_CODE_USER):
        return None
    calls = [
        *(f"calls step {s.step_name!r}" for s in outcome.new_steps),
        *(f"creates hook {h.token!r}" for h in outcome.new_hooks),
        *(f"starts child {c.workflow_name!r}" for c in outcome.new_children),
        *("sleeps" for _ in outcome.new_waits),
    ]
    if not calls:
        return None
    end = ends[-1]
    logged = f"the run's end ({end.type.value})"
    message = f"the log has {logged} but the code {calls[0]}"
    return Divergence(end.position, None, logged, calls[0], message)


def _reached(outcome: Completed | Failed | Continued | Suspended) -> str:
    if isinstance(outcome, Completed):
        return "completed"
    if isinstance(outcome, Continued):
        return "continued"
    if isinstance(outcome, Suspended):
        return "waiting"
    return "failed"
