"""Audit: who cancelled, resumed or forked a run, kept with the run.

An operator's action records its *actor*: the caller's IAM ARN when it came through the
deployed HTTP API (API Gateway's SigV4 authorizer, ``requestContext.authorizer.iam``), or
``"local"`` when made in process or through a local server. It is stored where the
action is: on ``run_cancelled`` and ``hook_received`` (their ``actor`` field), and on a fork
as its ``$forked_by`` attribute. ``audit_trail`` reads them back from a run and its log.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from world_aws.contract.records import Event, HookReceivedData, Run, RunCancelledData
from world_aws.errors import BadInput

LOCAL_ACTOR = "local"
FORKED_BY = "$forked_by"
# An IAM ARN is at most 2,048 characters (IAM quotas: "ARN length").
MAX_ACTOR_CHARS = 2048


def check_actor(actor: str) -> str:
    """``actor`` if it is 1-2,048 printable characters. Raises BadInput."""
    if not actor or len(actor) > MAX_ACTOR_CHARS or not actor.isprintable():
        raise BadInput(f"actor: expected 1-{MAX_ACTOR_CHARS} printable characters, got {actor[:40]!r}")
    return actor


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One recorded operator action on a run.

    Attributes:
        action: ``cancel``, ``resume`` or ``fork``.
        actor: who did it (an IAM ARN, or ``local``).
        at: when it was recorded (a fork: the fork's creation).
        detail: the cancel's reason, the resumed hook's id, or the run forked from.
    """

    action: str
    actor: str
    at: datetime
    detail: str | None = None


def audit_trail(run: Run, events: list[Event]) -> list[AuditEntry]:
    """The actions with an actor recorded on ``run`` and in its log, in log order.

    Actions recorded without one (a cancel by a parent's cancel, a child's end telling its
    parent, a runtime's own cancel) are not operators' and are left out.
    """
    trail: list[AuditEntry] = []
    forked_by = run.attributes.get(FORKED_BY)
    if forked_by is not None:
        source = run.attributes.get("$forked_from")  # forks.FORKED_FROM (forks imports this module)
        trail.append(AuditEntry("fork", forked_by, run.created_at, source))
    for event in events:
        data = event.data
        if isinstance(data, RunCancelledData) and data.actor is not None:
            trail.append(AuditEntry("cancel", data.actor, event.created_at, data.reason))
        elif isinstance(data, HookReceivedData) and data.actor is not None:
            trail.append(AuditEntry("resume", data.actor, event.created_at, event.correlation_id))
    return trail
