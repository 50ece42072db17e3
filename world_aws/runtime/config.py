"""Runtime and reconciler configuration, built once from the environment (``from_env()``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from world_aws.contract.limits import DEFAULT_MAX_QUEUE_DELIVERIES
from world_aws.errors import BadInput


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    """How the runtime dispatches and consumes.

    Attributes:
        resilient_step_dispatch: write ``step_created`` and publish the step message in
            parallel, the message carrying the input (SPEC §5.2). ``WORKFLOW_RESILIENT_STEP_DISPATCH``,
            on unless ``0``.
        max_queue_deliveries: deliveries of one message before the run fails with
            ``MAX_DELIVERIES_EXCEEDED`` (SPEC §4.3). ``WORKFLOW_MAX_QUEUE_DELIVERIES``, default 48.
        dispatch_parallelism: threads used for parallel creates and publishes of one pass.
        log_cache_runs: how many runs' logs a warm handler keeps (SPEC §8.3, replay cost).
        replay_cache_runs: how many runs' suspended replays a warm handler keeps and continues
            instead of replaying from the log. 0 replays every continuation cold, as a new Lambda
            container does: ``world-aws run``, ``dev`` and the test kit use 0, so a workflow that is
            not deterministic fails there and not first in production.
        max_deployment_reroutes: re-routes before ``DEPLOYMENT_MISMATCH`` (SPEC §5.4).
    """

    resilient_step_dispatch: bool = True
    max_queue_deliveries: int = DEFAULT_MAX_QUEUE_DELIVERIES
    dispatch_parallelism: int = 16
    log_cache_runs: int = 256
    replay_cache_runs: int = 256
    max_deployment_reroutes: int = 3

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RuntimeConfig:
        env = os.environ if environ is None else environ
        return cls(
            resilient_step_dispatch=env.get("WORKFLOW_RESILIENT_STEP_DISPATCH", "1").strip() != "0",
            max_queue_deliveries=_int(env, "WORKFLOW_MAX_QUEUE_DELIVERIES", DEFAULT_MAX_QUEUE_DELIVERIES),
        )


_RECONCILE_PERIOD = 300
_RECONCILE_AFTER = 600
_RECONCILE_MAX_RUNS = 100
_RECONCILE_MAX_BACKOFF = 86_400


@dataclass(frozen=True, slots=True)
class ReconcilerConfig:
    """How the reconciler finds and wakes runs that made no progress (``runtime/reconciler.py``).

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
    """

    period_seconds: float = _RECONCILE_PERIOD
    after_seconds: int = _RECONCILE_AFTER
    max_runs_per_tick: int = _RECONCILE_MAX_RUNS
    max_backoff_seconds: int = _RECONCILE_MAX_BACKOFF

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ReconcilerConfig:
        env = os.environ if environ is None else environ
        return cls(
            period_seconds=60 * _int(env, "WORKFLOW_RECONCILE_PERIOD_MINUTES", _RECONCILE_PERIOD // 60),
            after_seconds=_int(env, "WORKFLOW_RECONCILE_AFTER_SECONDS", _RECONCILE_AFTER),
            max_runs_per_tick=_int(env, "WORKFLOW_RECONCILE_MAX_RUNS", _RECONCILE_MAX_RUNS),
            max_backoff_seconds=_int(env, "WORKFLOW_RECONCILE_MAX_BACKOFF_SECONDS", _RECONCILE_MAX_BACKOFF),
        )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadInput(f"environment variable {name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise BadInput(f"environment variable {name} must be >= 1, got {value}")
    return value
