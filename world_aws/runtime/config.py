"""Runtime configuration, built once from the environment (``RuntimeConfig.from_env()``)."""

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
        max_deployment_reroutes: re-routes before ``DEPLOYMENT_MISMATCH`` (SPEC §5.4).
    """

    resilient_step_dispatch: bool = True
    max_queue_deliveries: int = DEFAULT_MAX_QUEUE_DELIVERIES
    dispatch_parallelism: int = 16
    log_cache_runs: int = 256
    max_deployment_reroutes: int = 3

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RuntimeConfig:
        env = os.environ if environ is None else environ
        return cls(
            resilient_step_dispatch=env.get("WORKFLOW_RESILIENT_STEP_DISPATCH", "1").strip() != "0",
            max_queue_deliveries=_int(env, "WORKFLOW_MAX_QUEUE_DELIVERIES", DEFAULT_MAX_QUEUE_DELIVERIES),
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
