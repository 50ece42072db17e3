"""Held runs: a replay that diverges on another deployment's code holds its run instead of failing it.

A run replays on the deployment that started it (``worker/deployments.py``), whose
code wrote its log: a divergence there is the code's own (it is not deterministic),
and the run fails with ``NON_DETERMINISM`` as before. A run replayed on other code
than its own (its deployment was retired or cannot be reached, or a deploy released
it onto new code) that diverges from its log is held instead: it stays ``running``,
marked ``blocked`` with where it diverged (``Run.blocked``), counted in the
``RunsHeld`` metric, listed by ``world-aws ls --blocked``. Nothing runs it until a
deploy: the new deployment releases every held run onto its code (``release_held``,
called on each local deploy and by the reconciler on AWS, whose functions then run
the newest version) and wakes it. A released run that replays is unblocked and goes
on; one that diverges again is held again, on the new deployment. An operator may
cancel a held run at any time (it is running).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import Blocked, Run
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import QueueName, World
from world_aws.engine.replay import ERROR_CODE_NON_DETERMINISM, Failed, Outcome
from world_aws.observe.telemetry import LOG
from world_aws.serde.errors import decode_error

# How many held runs one release pass looks at (the reconciler's next tick takes the rest).
RELEASE_BATCH = 100

_STEP = re.compile(r"at (\S+) the log has step '([^']*)' but the code calls step '([^']*)'")
_HOOK = re.compile(r"at (\S+) the log has hook token '([^']*)' but the code creates '([^']*)'")


def holds(world: World, run: Run) -> bool:
    """Whether a divergence of ``run``'s replay here holds it (else it fails the run).

    True when this deployment's code is not the code that wrote the log: the run is
    pinned elsewhere, or it was held once and released onto this code.
    """
    return run.deployment_id != world.deployment_id() or run.blocked is not None


def held_by(world: World, run: Run, outcome: Outcome) -> bool:
    """Whether ``outcome`` is a divergence from the log that holds ``run`` here (see ``holds``)."""
    return (
        isinstance(outcome, Failed) and outcome.error_code == ERROR_CODE_NON_DETERMINISM and holds(world, run)
    )


def hold(world: World, run: Run, outcome: Failed, position: int) -> bool:
    """Hold ``run`` where its replay diverged (``outcome``); False if it is no longer running."""
    try:
        message = decode_error(outcome.error).message
    except Exception:
        message = "the replay diverged from the log"
    blocked = blocked_mark(world, message, position)
    held = world.runs.hold(run.run_id, blocked)
    if held:
        LOG.warning(
            "run held: its replay diverged from its log on this deployment's code",
            extra={"run_id": run.run_id, "deployment_id": blocked.deployment_id, "reason": message},
        )
    return held


def blocked_mark(world: World, message: str, position: int) -> Blocked:
    """Where a replay diverged: the deployment, the log's last position, and the call if it names one."""
    found = _STEP.search(message) or _HOOK.search(message)
    at, expected, actual = found.groups() if found else (None, None, None)
    return Blocked(
        deployment_id=world.deployment_id(),
        position=position,
        message=message,
        since=world.clock.now(),
        at=at,
        expected=expected,
        actual=actual,
    )


@dataclass(frozen=True, slots=True)
class Release:
    """What one release pass did: the runs released onto this deployment, and those still held."""

    released: list[str] = field(default_factory=list)
    held: int = 0


def release_held(world: World, *, limit: int = RELEASE_BATCH) -> Release:
    """Release the held runs onto this deployment's code and wake each.

    A run held by this very deployment stays held (its code diverged here already).
    The wake-up is keyed by the run and the deployment, so passes that race release
    a run once.
    """
    here = world.deployment_id()
    released: list[str] = []
    held = 0
    for run in world.runs.list_blocked(limit=limit):
        if run.blocked is None or run.blocked.deployment_id == here:
            held += 1
            continue
        if not world.runs.release(run.run_id, deployment_id=here):
            continue  # ended, or released by another pass
        try:
            body = encode_payload(InvokePayload(run_id=run.run_id, requested_at=world.clock.now()))
            world.queue.publish(QueueName.WORKFLOW, body, idempotency_key=f"{run.run_id}:release:{here}")
        except Exception:
            # Released but not woken: the reconciler wakes a running run that stays silent.
            LOG.warning("could not wake a released run", exc_info=True, extra={"run_id": run.run_id})
        LOG.info("held run released", extra={"run_id": run.run_id, "deployment_id": here})
        released.append(run.run_id)
    return Release(released=released, held=held)
