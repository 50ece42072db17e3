"""Runtime and reconciler configuration, built once from the environment (``from_env()``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from world_aws.contract.limits import DEFAULT_MAX_QUEUE_DELIVERIES
from world_aws.errors import BadInput

# Events one run's log may hold before a continuation fails it with EVENT_LIMIT_EXCEEDED
# (workflow/chain.py): about 16,000 steps, a cold replay of ~1 s and ~15 MB of items.
DEFAULT_MAX_EVENTS_PER_RUN = 50_000


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    """How the runtime dispatches and consumes.

    Attributes:
        resilient_step_dispatch: write ``step_created`` and publish the step message in
            parallel, the message carrying the input (contract §5.2). ``WORKFLOW_RESILIENT_STEP_DISPATCH``,
            on unless ``0``.
        max_queue_deliveries: deliveries of one message before the run fails with
            ``MAX_DELIVERIES_EXCEEDED`` (contract §4.3). ``WORKFLOW_MAX_QUEUE_DELIVERIES``, default 48.
        batched_step_dispatch: a pass that writes nothing but step creates and knows where the
            log ends appends them in batches of ``rules.MAX_BATCH_EVENTS`` and publishes their
            messages after them; off, it creates and publishes every step in parallel (contract §5.2),
            as it does when an append does not land. ``WORKFLOW_BATCHED_STEP_DISPATCH``, on unless
            ``0`` (``python -m bench.dispatch_modes`` times both; ``docs/benchmarks.md``).
        dispatch_parallelism: threads used for parallel creates and publishes of one pass.
        log_cache_runs: how many runs' logs a warm handler keeps (contract §8.3, replay cost).
        replay_cache_runs: how many runs' suspended replays a warm handler keeps and continues
            instead of replaying from the log. 0 replays every continuation cold, as a new Lambda
            container does: ``world-aws run``, ``dev`` and the test kit use 0, so a workflow that is
            not deterministic fails there and not first in production.
        replay_checks: with a replay cache (``replay_cache_runs`` > 0), re-run the workflow from
            its first line against the whole log whenever the log has doubled since a run's
            replay last did, and always before recording the run's end (``engine/replaycache.py``):
            a workflow that is not deterministic fails with ``NON_DETERMINISM`` as it does when
            every continuation replays cold, at a cost linear in the run's length, not quadratic.
            ``world-aws run`` and ``dev`` use it; off by default (a deployed handler).
        max_deployment_reroutes: re-routes before ``DEPLOYMENT_MISMATCH`` (contract §5.4).
        max_inline_steps: steps of one wave the continuing invocation runs itself instead of
            dispatching them over the step queue (``worker/inline.py``): a sequential step, and up
            to this many branches of a fan-out. ``WORKFLOW_MAX_INLINE_STEPS``, default 3; 0 turns
            inline execution off (every step dispatched, the kill switch).
        inline_lease_seconds: how long another delivery leaves an inline step to its owner after
            the owner's last write of it or renewal: an owner renews it every third of this while
            its bodies run (``runtime/leases.py``), so a live owner keeps it however long a body
            runs, and a dead one's steps are taken over this long after its last renewal. Also how
            long past its due time a retry message is waited for before the step is re-published
            (``StepDispatcher.overdue_retries``). ``WORKFLOW_INLINE_LEASE_SECONDS``, default 30
            (3 × the visibility heartbeat, ``WORKFLOW_HEARTBEAT_SECONDS``).
        inline_margin_seconds: no inline step is started with less than this left before the
            invocation's deadline; the run is handed on by message instead.
            ``WORKFLOW_INLINE_MARGIN_SECONDS``, default 10.
        inline_fast_seconds: the branches of a fan-out wider than ``max_inline_steps`` wait while
            the inline ones run, and run inline in the next round, twice as wide, if no body of
            this one ran longer than this; once one does, the waiting branches are dispatched by
            message (``worker/inline.py``, "fast rounds"). ``WORKFLOW_INLINE_FAST_SECONDS``,
            default 0.1; 0 dispatches them at once.
        max_events_per_run: events a run's log may hold; a continuation past it fails the run
            with ``EVENT_LIMIT_EXCEEDED`` (end long loops with ``continue_as_new``).
            ``WORKFLOW_MAX_EVENTS_PER_RUN``, default 50,000.
    """

    resilient_step_dispatch: bool = True
    batched_step_dispatch: bool = True
    max_queue_deliveries: int = DEFAULT_MAX_QUEUE_DELIVERIES
    dispatch_parallelism: int = 16
    log_cache_runs: int = 256
    replay_cache_runs: int = 256
    replay_checks: bool = False
    max_deployment_reroutes: int = 3
    max_inline_steps: int = 3
    inline_lease_seconds: int = 30
    inline_margin_seconds: int = 10
    inline_fast_seconds: float = 0.1
    max_events_per_run: int = DEFAULT_MAX_EVENTS_PER_RUN

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RuntimeConfig:
        env = os.environ if environ is None else environ
        return cls(
            resilient_step_dispatch=env.get("WORKFLOW_RESILIENT_STEP_DISPATCH", "1").strip() != "0",
            batched_step_dispatch=env.get("WORKFLOW_BATCHED_STEP_DISPATCH", "1").strip() != "0",
            max_queue_deliveries=_int(env, "WORKFLOW_MAX_QUEUE_DELIVERIES", DEFAULT_MAX_QUEUE_DELIVERIES),
            max_inline_steps=_int(env, "WORKFLOW_MAX_INLINE_STEPS", 3, minimum=0),
            inline_lease_seconds=_int(env, "WORKFLOW_INLINE_LEASE_SECONDS", 30),
            inline_margin_seconds=_int(env, "WORKFLOW_INLINE_MARGIN_SECONDS", 10, minimum=0),
            inline_fast_seconds=_float(env, "WORKFLOW_INLINE_FAST_SECONDS", 0.1),
            max_events_per_run=_int(env, "WORKFLOW_MAX_EVENTS_PER_RUN", DEFAULT_MAX_EVENTS_PER_RUN),
        )


_RECONCILE_PERIOD = 300
_RECONCILE_AFTER = 600
_RECONCILE_MAX_RUNS = 100
_RECONCILE_MAX_BACKOFF = 86_400
_RECONCILE_SWEEP_LAG = 900
_RECONCILE_SWEEP_MAX_RUNS = 10_000
_RETENTION_MAX_RUNS = 100


@dataclass(frozen=True, slots=True)
class ReconcilerConfig:
    """How the reconciler finds and wakes runs that made no progress (``worker/reconciler.py``).

    Attributes:
        period_seconds: seconds between ticks where the process schedules them itself
            (the embedded stack, ``world-aws dev``; on AWS the EventBridge schedule does).
            ``WORKFLOW_RECONCILE_PERIOD_MINUTES`` (whole minutes, as EventBridge rates are),
            default 5.
        after_seconds: a non-terminal run whose last event is older than this is woken.
            ``WORKFLOW_RECONCILE_AFTER_SECONDS``, default 600: minutes above the longest
            silence of a working run (a step body runs at most the step function's 150 s
            timeout). Runs that are silent on purpose (a sleep, a hook, a long retry delay)
            are woken too, harmlessly, with gaps that double (``max_backoff_seconds``).
        max_runs_per_tick: runs looked at per tick (one index Query of at most this many).
            ``WORKFLOW_RECONCILE_MAX_RUNS``, default 100 (one BatchGetItem).
        max_backoff_seconds: the longest gap between two wakes of a run that stays idle.
            ``WORKFLOW_RECONCILE_MAX_BACKOFF_SECONDS``, default 86400 (a day).
        sweep_lag_seconds: how far behind its clock a tick's sweep of new runs stays
            (``runs.sweep_created``): runs created before now − this are put in the live
            index if they are still going. ``WORKFLOW_RECONCILE_SWEEP_LAG_SECONDS``,
            default 900: a creator's clock and the reconciler's are each within 5 minutes
            of AWS's (SigV4 refuses a request signed further off, and boto3 does not
            correct skew), which leaves 5 minutes for the write and the index to land.
        max_sweep_runs: runs a tick's sweep reads at most (``WORKFLOW_RECONCILE_SWEEP_MAX_RUNS``,
            default 10000: 100 BatchGetItems); a sweep left behind goes on at the next tick.
        max_expired_runs: ended runs past their retention a tick erases at most
            (``runtime/retention.py``). ``WORKFLOW_RETENTION_MAX_RUNS_PER_TICK``, default 100;
            0 turns retention's erasure off (runs then wait, in the index, to be erased).
    """

    period_seconds: float = _RECONCILE_PERIOD
    after_seconds: int = _RECONCILE_AFTER
    max_runs_per_tick: int = _RECONCILE_MAX_RUNS
    max_backoff_seconds: int = _RECONCILE_MAX_BACKOFF
    sweep_lag_seconds: int = _RECONCILE_SWEEP_LAG
    max_sweep_runs: int = _RECONCILE_SWEEP_MAX_RUNS
    max_expired_runs: int = _RETENTION_MAX_RUNS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReconcilerConfig:
        env = os.environ if environ is None else environ
        return cls(
            period_seconds=60 * _int(env, "WORKFLOW_RECONCILE_PERIOD_MINUTES", _RECONCILE_PERIOD // 60),
            after_seconds=_int(env, "WORKFLOW_RECONCILE_AFTER_SECONDS", _RECONCILE_AFTER),
            max_runs_per_tick=_int(env, "WORKFLOW_RECONCILE_MAX_RUNS", _RECONCILE_MAX_RUNS),
            max_backoff_seconds=_int(env, "WORKFLOW_RECONCILE_MAX_BACKOFF_SECONDS", _RECONCILE_MAX_BACKOFF),
            sweep_lag_seconds=_int(
                env, "WORKFLOW_RECONCILE_SWEEP_LAG_SECONDS", _RECONCILE_SWEEP_LAG, minimum=0
            ),
            max_sweep_runs=_int(env, "WORKFLOW_RECONCILE_SWEEP_MAX_RUNS", _RECONCILE_SWEEP_MAX_RUNS),
            max_expired_runs=_int(
                env, "WORKFLOW_RETENTION_MAX_RUNS_PER_TICK", _RETENTION_MAX_RUNS, minimum=0
            ),
        )


_SCHEDULE_PERIOD = 60
_SCHEDULE_HORIZON = 86_400


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """How the scheduler starts scheduled workflows (``worker/scheduler.py``).

    Attributes:
        period_seconds: seconds between passes where the process runs them itself (the
            local stack, ``world-aws dev``; on AWS the template's EventBridge rule, every
            minute). A tick starts at most this late. ``WORKFLOW_SCHEDULE_PERIOD_SECONDS``,
            default 60 (5 in the local stack).
        horizon_seconds: due ticks older than this are never started nor counted as
            missed (the bound on a pass after downtime). ``WORKFLOW_SCHEDULE_HORIZON_SECONDS``,
            default 86400 (a day).
    """

    period_seconds: float = _SCHEDULE_PERIOD
    horizon_seconds: int = _SCHEDULE_HORIZON

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, default_period_seconds: int = _SCHEDULE_PERIOD
    ) -> SchedulerConfig:
        env = os.environ if environ is None else environ
        return cls(
            period_seconds=_int(env, "WORKFLOW_SCHEDULE_PERIOD_SECONDS", default_period_seconds),
            horizon_seconds=_int(env, "WORKFLOW_SCHEDULE_HORIZON_SECONDS", _SCHEDULE_HORIZON),
        )


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 1) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadInput(f"environment variable {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise BadInput(f"environment variable {name} must be >= {minimum}, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise BadInput(f"environment variable {name} must be a number, got {raw!r}") from None
    if not value >= 0:  # also refuses nan
        raise BadInput(f"environment variable {name} must be >= 0, got {raw!r}")
    return value
