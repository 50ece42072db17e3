"""``Runtime``: a user's ``Workflows`` bound to a World, as one object.

A façade over a :class:`~world_aws.client.client.Client` (start, read, resume, fork:
``client/client.py``) and a :class:`~world_aws.worker.worker.Worker` (the queue
handler: ``worker/worker.py``) sharing one thread pool. A service that only starts
runs needs only the client; a consumer needs the worker.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from world_aws.client.audit import LOCAL_ACTOR
from world_aws.client.client import Client
from world_aws.client.forks import Forks
from world_aws.client.handle import RunHandle
from world_aws.contract.erasure import ErasedRun
from world_aws.contract.world import Delivery, HandlerResult, World
from world_aws.engine.logcache import LogCache
from world_aws.worker.config import RuntimeConfig
from world_aws.worker.deployments import Deployments, Handover, SingleDeployment
from world_aws.worker.dispatch import StepDispatcher
from world_aws.worker.executor import StepExecutor
from world_aws.worker.leases import LeaseKeeper
from world_aws.worker.orchestrator import Orchestrator
from world_aws.worker.worker import Worker
from world_aws.workflow.registry import WorkflowFunction, Workflows
from world_aws.workflow.typed_hooks import Hook as TypedHookBase


class Runtime:
    """``app`` bound to ``world``: the client API and the queue handler."""

    def __init__(
        self,
        world: World,
        app: Workflows,
        config: RuntimeConfig | None = None,
        *,
        handover: Handover | None = None,
        deployments: Deployments | None = None,
    ) -> None:
        """Bind ``app`` to ``world``.

        ``handover``: the app's other deployments. With it, a delivery for a run pinned to
        another deployment than ``world.deployment_id()`` is handed to that deployment
        (``worker/deployments.py``); without it, every delivery runs on this code.
        ``deployments``: what the API lists and retires (default: this one alone).
        """
        self.world = world
        self.app = app
        self.config = config or RuntimeConfig()
        self.handover = handover
        self.deployments: Deployments = deployments or SingleDeployment(world)
        self._pool = ThreadPoolExecutor(
            self.config.dispatch_parallelism, thread_name_prefix="world-aws-dispatch"
        )
        self.forks = Forks(world, app, self._pool)
        self.client = Client(world, app, self._pool, self.forks)
        self.worker = Worker(world, app, self.config, self._pool, self.forks, handover=handover)

    # The worker's parts, as before the split (tests, benches and the API reach them).
    @property
    def logs(self) -> LogCache:
        return self.worker.logs

    @property
    def dispatcher(self) -> StepDispatcher:
        return self.worker.dispatcher

    @property
    def orchestrator(self) -> Orchestrator:
        return self.worker.orchestrator

    @property
    def executor(self) -> StepExecutor:
        return self.worker.executor

    @property
    def leases(self) -> LeaseKeeper:
        """Renews the leases of the inline bodies this runtime runs (``worker/leases.py``)."""
        return self.worker.leases

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.worker.close()

    # --- the client ------------------------------------------------------------------

    def start(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        *args: Any,
        idempotency_key: str | None = None,
        attributes: dict[str, str] | None = None,
        priority: int | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """``Client.start``: start a run of ``workflow`` (the same ``idempotency_key``: the same run;
        ``priority``: among the runs waiting for the workflow's slots, higher first)."""
        return self.client.start(
            workflow,
            *args,
            idempotency_key=idempotency_key,
            attributes=attributes,
            priority=priority,
            **kwargs,
        )

    def start_again(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        *args: Any,
        idempotency_key: str,
        attributes: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> RunHandle:
        """``Client.start_again``: redo a keyed start whose first message may never have left."""
        return self.client.start_again(
            workflow, *args, idempotency_key=idempotency_key, attributes=attributes, **kwargs
        )

    def start_tick(
        self,
        workflow: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        tick_key: str,
        attributes: dict[str, str],
        again: bool = False,
    ) -> RunHandle:
        """``Client.start_tick``: the scheduler's start of a tick."""
        return self.client.start_tick(
            workflow, args, kwargs, tick_key=tick_key, attributes=attributes, again=again
        )

    def fork(
        self,
        run_id: str,
        from_step: str | None = None,
        *,
        idempotency_key: str | None = None,
        actor: str = LOCAL_ACTOR,
    ) -> RunHandle:
        """``Client.fork``: a new run of an ended (or held) run's workflow and input, from a step."""
        return self.client.fork(run_id, from_step, idempotency_key=idempotency_key, actor=actor)

    def get_run(self, run_id: str) -> RunHandle:
        """A handle on an existing run. Raises NotFound."""
        return self.client.get_run(run_id)

    def delete_run(self, run_id: str) -> ErasedRun:
        """``Client.delete_run``: erase an ended run and all its data. Raises NotFound, Conflict."""
        erased = self.client.delete_run(run_id)
        self.logs.forget(run_id)
        return erased

    def resume_hook(
        self,
        token: str,
        payload: Any,
        *,
        resume_id: str | None = None,
        hook_type: type[TypedHookBase] | None = None,
        actor: str = LOCAL_ACTOR,
    ) -> str:
        """``Client.resume_hook``: deliver ``payload`` to the live hook holding ``token``."""
        return self.client.resume_hook(token, payload, resume_id=resume_id, hook_type=hook_type, actor=actor)

    # --- the worker ------------------------------------------------------------------

    def handle(self, delivery: Delivery) -> HandlerResult:
        """``Worker.handle``: one delivery from either queue (contract §4.3)."""
        return self.worker.handle(delivery)
