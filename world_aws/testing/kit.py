"""The test kit: run your workflows to completion inside a test, in-process, with time skipped.

``WorkflowKit(app)`` binds ``app`` to a fresh in-memory World on a manual clock
and delivers its queue messages on the test's thread. ``kit.run(workflow, ...)``
starts a run and drives it to its end: a ``sleep("1h")``, a retry's delay or a
hook's timeout moves the clock instead of waiting, so the test takes
milliseconds. ``kit.start`` drives the run the same way but stops where it waits for the outside:
a hook that has not had a payload yet (its timeout, if any, does not pass: the test
resumes the hook, or lets the time pass with ``kit.advance``). ``kit.resume_hook``
drives on to the next such hook, or the end; ``kit.finish`` to the end. Every run that ends is replayed
cold from its log and must reach the same outcome (like Temporal's Replayer),
so a workflow that is not deterministic fails its test. ``kit.replay("runs.json")``
replays runs exported from a stack (``world-aws export``) against the app: the
replay gate a CI runs before ``sam deploy``.

Steps can be replaced by fakes (``fakes={charge: fake_charge}`` or
``kit.fake(charge, fn)``). The ``workflow_kit`` pytest fixture builds kits and
closes them after the test; it is registered as a pytest plugin when world-aws is
installed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from world_aws.contract import log_export
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import ResolveData, RunStatus
from world_aws.engine.replay import (
    ERROR_CODE_NON_DETERMINISM,
    Completed,
    Continued,
    Failed,
    Replay,
    Suspended,
)
from world_aws.engine.replay_gate import RunVerdict, replay_runs
from world_aws.errors import NonDeterminismError
from world_aws.local.memory import MemoryWorld, create_memory_world
from world_aws.runtime.runtime import Runtime
from world_aws.serde.codec import decode_error
from world_aws.testing.kit_runs import KitRun, StepCall, open_hooks
from world_aws.testing.pump import MemoryPump, Stalled, settle
from world_aws.worker.config import RuntimeConfig
from world_aws.workflow.chain import ContinuedAsNew
from world_aws.workflow.context import parse_duration
from world_aws.workflow.registry import StepFunction, WorkflowFunction, Workflows

__all__ = [
    "KitRun",
    "ReplayDiverged",
    "RunVerdict",
    "StepCall",
    "WorkflowKit",
    "check_replay",
    "workflow_kit",
]

# ``start``, ``resume_hook`` and ``settle`` stop driving after this many rounds of deliveries ...
SETTLE_ROUNDS = 200
# ... and look for a hook in this many live runs of each status.
SETTLE_RUNS = 1000

Fakes = Mapping[StepFunction[Any, Any] | str, Callable[..., Any]]


class ReplayDiverged(AssertionError):
    """``WorkflowKit.replay`` found runs whose log the code no longer matches."""


class RunNotFinished(AssertionError):
    """``finish`` found the run waiting with nothing due: it needs a hook resumed (or it is stuck)."""


class WorkflowKit:
    """An app bound to an in-memory World whose time the test controls.

    Args:
        app: the workflows under test.
        fakes: steps to replace, by function or name, with bodies taking the same arguments.
        start: the clock's initial time (UTC); now by default.
        config: runtime configuration (the defaults, with the warm replay cache off).
    """

    def __init__(
        self,
        app: Workflows,
        *,
        fakes: Fakes | None = None,
        start: datetime | None = None,
        config: RuntimeConfig | None = None,
    ) -> None:
        self.clock = ManualClock(start)
        self.world: MemoryWorld = create_memory_world(clock=self.clock)
        self._pump = MemoryPump(self.world)
        self._original = app
        self._fakes: dict[StepFunction[Any, Any] | str, Callable[..., Any]] = dict(fakes or {})
        self._config = config or RuntimeConfig(replay_cache_runs=0)  # every continuation cold
        self._runtime: Runtime | None = None

    # --- setup ----------------------------------------------------------------------

    @property
    def app(self) -> Workflows:
        """The app the runtime runs: the one under test, with the fakes in place."""
        return self.runtime.app

    @property
    def runtime(self) -> Runtime:
        """The runtime bound to this kit's World (built on first use)."""
        if self._runtime is None:
            app = self._original.with_steps_replaced(self._fakes) if self._fakes else self._original
            self._runtime = Runtime(self.world, app, self._config)
        return self._runtime

    def fake(self, step: StepFunction[Any, Any] | str, body: Callable[..., Any]) -> None:
        """Replace ``step``'s body with ``body`` from now on (runs already started use it too)."""
        self._fakes[step] = body
        if self._runtime is not None:
            self._runtime.close()
            self._runtime = None

    def close(self) -> None:
        if self._runtime is not None:
            self._runtime.close()
        self.world.close()

    def __enter__(self) -> WorkflowKit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- driving --------------------------------------------------------------------

    def start(self, workflow: WorkflowFunction[Any, Any] | str, *args: Any, **kwargs: Any) -> KitRun:
        """Start a run and drive it until it ends or waits on a hook (see :meth:`settle`).

        Sleeps and retry delays before the run's first hook pass on the kit's clock, so
        ``run.waiting_hooks()`` lists a hook created after a retry or a sleep at once.
        """
        handle = self.runtime.start(workflow, *args, **kwargs)
        run = KitRun(self, handle.run_id)
        self.settle()
        return run

    def settle(self) -> None:
        """Deliver messages and skip time until the kit's runs are quiescent.

        Quiescent: every run has ended, or one of them waits on a hook that has had no
        payload yet (while one does, the clock stands still, so a hook's timeout never
        passes here: ``advance`` passes it), or nothing is due. A run that keeps waking
        itself (a poller that sleeps in a loop) is left after ``SETTLE_ROUNDS`` rounds of
        deliveries, wherever it is. A hook that takes several payloads counts as answered
        after its first: to keep a later timeout from passing, resume it before the
        kit skips time again.
        """
        try:
            settle(
                self._pump, self.clock, self.runtime.handle, self._waits_on_a_hook, max_rounds=SETTLE_ROUNDS
            )
        except Stalled:
            pass

    def _waits_on_a_hook(self) -> bool:
        for status in (RunStatus.PENDING, RunStatus.RUNNING):
            for live in self.world.runs.list(status=status, limit=SETTLE_RUNS).runs:
                events = self.world.events.list(live.run_id, resolve_data=ResolveData.NONE)
                if open_hooks(events, unanswered=True):
                    return True
        return False

    def run(self, workflow: WorkflowFunction[Any, Any] | str, *args: Any, **kwargs: Any) -> KitRun:
        """Start a run and drive it to its end, skipping time (see :meth:`finish`)."""
        return self.finish(self.start(workflow, *args, **kwargs))

    def finish(self, run: KitRun) -> KitRun:
        """Deliver messages and jump the clock to the next due one until ``run`` ends; then check it replays.

        Raises:
            RunNotFinished: the run waits with nothing due (a hook nobody resumed).
            NonDeterminismError: a cold replay from the log does not reach the run's outcome.
        """
        if not settle(self._pump, self.clock, self.runtime.handle, lambda: run.status.terminal):
            hooks = run.waiting_hooks()
            waiting = f"hooks {hooks}: resume them with kit.resume_hook" if hooks else "nothing"
            raise RunNotFinished(f"run {run.run_id} is {run.status.value} and waits on {waiting}")
        check_replay(self.app, self.world, run.run_id)
        # A run that continued as new: its result is the chain's last run's, so settle those too.
        lineage = self.runtime.orchestrator.lineage
        current = run.run_id
        while (following := lineage.continued_to(self.world.runs.get(current))) is not None:
            current = following
            if not settle(self._pump, self.clock, self.runtime.handle, lambda: self._ended(following)):
                raise RunNotFinished(f"run {following}, continuing run {run.run_id}, did not end")
            check_replay(self.app, self.world, following)
        return run

    def _ended(self, run_id: str) -> bool:
        return self.world.runs.get(run_id, resolve_data=ResolveData.NONE).status.terminal

    def advance(self, duration: str | float | timedelta) -> None:
        """Let ``duration`` ("90s", "2h", seconds) pass, delivering what falls due on the way."""
        until = self.clock.now() + timedelta(seconds=parse_duration(duration))
        settle(self._pump, self.clock, self.runtime.handle, lambda: False, until=until)

    def resume_hook(self, token: str, payload: Any) -> str:
        """Send ``payload`` to the hook holding ``token``, then :meth:`settle`; returns the resume id."""
        resume_id = self.runtime.resume_hook(token, payload)
        self.settle()
        return resume_id

    def replay(self, path: str | Path) -> list[RunVerdict]:
        """Replay the runs of an export (``world-aws export``) against this kit's app: the replay gate.

        Run it in CI before a deploy, on runs exported from the stack: a run in flight
        whose log the new code no longer matches would fail with ``NON_DETERMINISM``
        after the deploy. Nothing runs: steps are replayed from their recorded results.

        Returns:
            A verdict per run, in the file's order (all ok).

        Raises:
            ReplayDiverged: a run diverges; its message names each such run, the
                position, the step the log has and the step the code calls.
            BadInput: the file is not a readable export.
        """
        verdicts = replay_runs(self._original, log_export.read_file(path))
        diverged = [v for v in verdicts if not v.ok]
        if diverged:
            lines = "\n".join(v.line() for v in diverged)
            raise ReplayDiverged(f"{len(diverged)} of {len(verdicts)} run(s) diverge from the code:\n{lines}")
        return verdicts


def check_replay(app: Workflows, world: MemoryWorld | Any, run_id: str) -> None:
    """Replay an ended run cold from its log and check it reaches the recorded outcome.

    A workflow that reads the clock, a random number or global state where it
    should not takes another path on a replay; this finds it in a test instead
    of in production, where a cold Lambda container replays from the log.

    Raises:
        NonDeterminismError: the replay diverges from the log or reaches another outcome.
    """
    run = world.runs.get(run_id, resolve_data=ResolveData.ALL)
    if run.error_code == ERROR_CODE_NON_DETERMINISM:  # the runtime found it already
        raise NonDeterminismError(decode_error(run.error or b"").message)
    if run.status not in (RunStatus.COMPLETED, RunStatus.FAILED):
        return
    replay = Replay(run, app.get_workflow(run.workflow_name), app.serializer)
    try:
        replay.feed(world.events.list(run_id, resolve_data=ResolveData.ALL))
        outcome = replay.outcome()
    finally:
        replay.close()
    if isinstance(outcome, Failed) and outcome.error_code == ERROR_CODE_NON_DETERMINISM:
        raise NonDeterminismError(decode_error(outcome.error).message)
    loads = app.serializer.loads
    if run.status is RunStatus.COMPLETED and isinstance(outcome, Continued):
        same = isinstance(loads(run.output or b""), ContinuedAsNew)
    elif run.status is RunStatus.COMPLETED:
        same = isinstance(outcome, Completed) and loads(outcome.output) == loads(run.output or b"")
    else:  # the same user error, or a failure the runtime recorded (an unknown workflow, too many deliveries)
        same = isinstance(outcome, Failed) and (
            run.error_code != "USER_ERROR" or _type(outcome.error) == _type(run.error)
        )
    if not same:
        got = "still waiting" if isinstance(outcome, Suspended) else type(outcome).__name__.lower()
        raise NonDeterminismError(
            f"run {run_id} {run.status.value}, but a cold replay of its log ended {got}: "
            "the workflow is not deterministic"
        )


def _type(error: bytes | None) -> str:
    return decode_error(error or b"").type


@pytest.fixture
def workflow_kit() -> Iterator[Callable[..., WorkflowKit]]:
    """Build a :class:`WorkflowKit` (``kit = workflow_kit(app, fakes=...)``); closed after the test."""
    kits: list[WorkflowKit] = []

    def build(app: Workflows, **options: Any) -> WorkflowKit:
        kit = WorkflowKit(app, **options)
        kits.append(kit)
        return kit

    yield build
    for kit in kits:
        kit.close()
