"""The deployments of a local stack: one ``Runtime`` per ``stack.deploy(app)``, all on one World.

The first deployment keeps the World's own id (``dpl_local`` unless configured); each
``deploy`` adds ``<first>-2``, ``<first>-3``... with its own ``Runtime`` over a
:class:`~world_aws.worker.deployments.DeployedWorld` that serves that id. The
stack's consumers hand every delivery to the newest deployment, which starts new
runs and hands a delivery for a run pinned to an older one to that deployment's
``Runtime`` (``hand_over``), in this thread: so a run keeps replaying on the code
that started it, as on AWS, where the hand-over is a synchronous invoke of the
run's Lambda version (``aws/versions.py``).

A deployment is kept while the stack runs (``retire`` drops one no live run is
pinned to). Each deploy releases the held runs (``worker/holding.py``) onto the
new code.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable

from world_aws.contract.world import Delivery, Deployment, HandlerResult, World
from world_aws.errors import BadInput, DeploymentGone, DeploymentInUse, NotFound
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import DeployedWorld
from world_aws.worker.holding import release_held
from world_aws.workflow.registry import Workflows


class LocalDeployments:
    """The deployments of one local stack, newest last; thread-safe."""

    def __init__(
        self,
        world: World,
        app: Workflows,
        config: RuntimeConfig,
        *,
        on_deploy: Callable[[Runtime], None] | None = None,
    ) -> None:
        self._world = world
        self._config = config
        self._lock = threading.Lock()
        self._base = world.deployment_id()
        self._runtimes: dict[str, Runtime] = {}
        self._order: list[str] = []
        self._on_deploy = on_deploy
        self._add(self._base, app)

    @property
    def current(self) -> Runtime:
        """The newest deployment's runtime: it starts new runs and receives every delivery."""
        with self._lock:
            return self._runtimes[self._order[-1]]

    def list(self) -> list[Deployment]:
        """Every deployment kept, oldest first, with its live runs (``Deployments``)."""
        ids = self.ids()
        return [Deployment(d, self._world.runs.count_live(d), newest=d == ids[-1]) for d in ids]

    def ids(self) -> builtins.list[str]:
        """The deployment ids still kept, oldest first."""
        with self._lock:
            return list(self._order)

    def runtime(self, deployment_id: str) -> Runtime:
        """The runtime of ``deployment_id``. Raises DeploymentGone."""
        with self._lock:
            found = self._runtimes.get(deployment_id)
        if found is None:
            raise DeploymentGone(f"deployment {deployment_id!r} is not one of this stack's {self.ids()}")
        return found

    def deploy(self, app: Workflows) -> str:
        """Start a new deployment of ``app``: new runs start on it; returns its id.

        Runs started before keep replaying on the deployment that started them. The held
        runs (``worker/holding.py``) are released onto the new one.
        """
        with self._lock:
            deployment_id = f"{self._base}-{len(self._order) + 1}"
        # Not an id of this stack's (after a retire), nor one live runs are pinned to: a stack
        # restarted on kept state (`world-aws dev --state`) numbers afresh, and its new code
        # must not take the id of runs from before the restart.
        while deployment_id in self.ids() or self._world.runs.count_live(deployment_id):
            deployment_id += "+"
        runtime = self._add(deployment_id, app)
        if self._on_deploy is not None:
            self._on_deploy(runtime)
        release_held(runtime.world)
        return deployment_id

    def retire(self, deployment_id: str, *, force: bool = False) -> None:
        """Drop an older deployment no live run is pinned to.

        ``force``: drop it even so. Its runs then replay on the newest code; those whose
        replay diverges are held (``worker/holding.py``).

        Raises:
            NotFound: no such deployment.
            BadInput: it is the newest (new runs start on it).
            DeploymentInUse: a run is still pinned to it.
        """
        with self._lock:
            if deployment_id not in self._runtimes:
                raise NotFound(f"no deployment {deployment_id!r} (this stack has {self._order})")
            if deployment_id == self._order[-1]:
                raise BadInput(f"deployment {deployment_id!r} is the newest: new runs start on it")
        live = 0 if force else self._world.runs.count_live(deployment_id)
        if live:
            raise DeploymentInUse(
                f"deployment {deployment_id!r} still has {live} live run(s) pinned to it; "
                "retire it once they end (or cancel them)"
            )
        with self._lock:
            runtime = self._runtimes.pop(deployment_id)
            self._order.remove(deployment_id)
        runtime.close()

    def handle(self, delivery: Delivery) -> HandlerResult:
        """The stack's queue handler: every delivery goes to the newest deployment first."""
        return self.current.handle(delivery)

    def hand_over(self, deployment_id: str, delivery: Delivery) -> HandlerResult:
        """Handle ``delivery`` on ``deployment_id``'s runtime (``Handover``). Raises DeploymentGone."""
        return self.runtime(deployment_id).handle(delivery)

    def close(self) -> None:
        with self._lock:
            runtimes, self._runtimes, self._order = list(self._runtimes.values()), {}, []
        for runtime in runtimes:
            runtime.close()

    def _add(self, deployment_id: str, app: Workflows) -> Runtime:
        world = self._world if deployment_id == self._base else DeployedWorld(self._world, deployment_id)
        runtime = Runtime(world, app, self._config, handover=self, deployments=self)
        with self._lock:
            self._runtimes[deployment_id] = runtime
            self._order.append(deployment_id)
        return runtime
