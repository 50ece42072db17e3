"""Pinning runs to the deployment that started them (README "Deploying changes").

A run records the deployment it started on (``Run.deployment_id``). A deployment
is one version of the app's code: a published Lambda version on AWS
(``aws/versions.py``), one ``stack.deploy(app)`` locally (``local/deployments.py``).
Every deployment's consumers take deliveries from the same two queues, so the one
that receives a delivery for a run pinned elsewhere hands it to that run's own
deployment (a :class:`Handover`) and answers with its outcome. New runs start on the
deployment that serves the API, the newest.

A :class:`Handover` is what the runtime knows of the other deployments: whether it
can reach one, and how to hand it a delivery. A deployment it cannot reach (gone,
or never known to this process) raises :class:`DeploymentGone`: the delivery is
then handled here, on the current code, and a run whose replay diverges from its
log is held (``worker/holding.py``) until a deploy brings code it replays on.
"""

from __future__ import annotations

from typing import Protocol

from world_aws.contract.world import Delivery, Deployment, ForwardingWorld, HandlerResult, World
from world_aws.errors import BadInput, DeploymentGone, NotFound
from world_aws.observe.telemetry import LOG

__all__ = [
    "DeployedWorld",
    "Deployment",
    "DeploymentGone",
    "Deployments",
    "Handover",
    "SingleDeployment",
    "hand_over_or_none",
    "pinned_elsewhere",
]


class Handover(Protocol):
    """The other deployments of this app, as one process sees them."""

    def hand_over(self, deployment_id: str, delivery: Delivery) -> HandlerResult:
        """Handle ``delivery`` on deployment ``deployment_id`` and return what it answered.

        Raises:
            DeploymentGone: that deployment cannot be reached (the delivery is handled here).
            WorldAwsError: the hand-over failed for a cause that may pass (redelivered).
        """
        ...


class Deployments(Protocol):
    """What an operator sees of the deployments: listing them, retiring an old one."""

    def list(self) -> list[Deployment]:
        """Every deployment kept, oldest first."""
        ...

    def retire(self, deployment_id: str) -> None:
        """Remove an older deployment no live run is pinned to.

        Raises:
            NotFound: no such deployment.
            BadInput: it is the newest.
            DeploymentInUse: a run is still pinned to it.
        """
        ...


class SingleDeployment:
    """The deployments of a runtime that has no others (no hand-over): its own, which is the newest."""

    def __init__(self, world: World) -> None:
        self._world = world

    def list(self) -> list[Deployment]:
        here = self._world.deployment_id()
        return [Deployment(here, self._world.runs.count_live(here), newest=True)]

    def retire(self, deployment_id: str) -> None:
        if deployment_id != self._world.deployment_id():
            raise NotFound(
                f"no deployment {deployment_id!r}: this stack has only {self._world.deployment_id()!r}"
            )
        raise BadInput(f"deployment {deployment_id!r} is the newest: new runs start on it")


def pinned_elsewhere(world: World, handover: Handover | None, deployment_id: str) -> bool:
    """Whether a delivery for a run pinned to ``deployment_id`` is for another deployment to handle."""
    return handover is not None and deployment_id != world.deployment_id()


def hand_over_or_none(handover: Handover, deployment_id: str, delivery: Delivery) -> HandlerResult | None:
    """``handover.hand_over``, or None when that deployment is gone (the caller handles it)."""
    try:
        return handover.hand_over(deployment_id, delivery)
    except DeploymentGone as gone:
        LOG.warning(
            "the run's deployment cannot be reached; handling its delivery on this one",
            extra={"deployment_id": deployment_id, "reason": str(gone)},
        )
        return None


class DeployedWorld(ForwardingWorld):
    """``inner`` as one deployment sees it: the same stores, its own ``deployment_id()``.

    Locally every deployment shares one World (one table, one pair of queues), as
    every published version of a stack's functions does on AWS.
    """

    def __init__(self, inner: World, deployment_id: str) -> None:
        super().__init__(inner)
        self._deployment_id = deployment_id

    def deployment_id(self) -> str:
        return self._deployment_id

    def close(self) -> None:
        """Nothing: the World belongs to whoever made it, not to one deployment."""
