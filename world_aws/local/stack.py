"""The embedded default: a whole world-aws stack in this process.

``local_stack(app)`` starts moto on loopback, provisions the resources declared
in ``template.yaml``, builds the AWS World against it, binds ``app`` to a
``Runtime``, consumes both queues with the local event source and runs the
reconciler on a background thread every ``ReconcilerConfig.period_seconds`` (as the
EventBridge schedule does on AWS), and the scheduler, which starts the app's
scheduled workflows, every ``SchedulerConfig.period_seconds``. ``kind="memory"`` gives the same over the
in-memory World, for the fastest feedback.

``stack.deploy(new_app)`` starts a new deployment (``local/deployments.py``): new runs,
the schedules' ticks and the reconciler move to it, and the runs started before keep
replaying on the app that started them (README "Deploying changes").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from world_aws.contract.world import Consumers, World
from world_aws.errors import BadInput
from world_aws.local.deployments import LocalDeployments
from world_aws.local.failure_log import FailureLog
from world_aws.local.reconcile_loop import ReconcilerLoop, TickLoop
from world_aws.runtime.runtime import Runtime
from world_aws.worker.config import ReconcilerConfig, RuntimeConfig, SchedulerConfig
from world_aws.worker.reconciler import Reconciler
from world_aws.worker.scheduler import Scheduler
from world_aws.workflow.registry import Workflows

if TYPE_CHECKING:
    from world_aws.local.moto_process import MotoProcess

LOG = logging.getLogger(__name__)
# Locally the scheduler passes more often than the minute of the AWS rule.
LOCAL_SCHEDULE_PERIOD_SECONDS = 5


class LocalStack:
    """A running local stack: one World, its consumers, the reconciler, and the app's deployments.

    ``runtime`` is the newest deployment's (it starts new runs); ``deploy(app)`` adds a
    deployment (``local/deployments.py``): runs started before keep replaying on the
    app that started them.
    """

    def __init__(
        self,
        *,
        world: World,
        deployments: LocalDeployments,
        consumers: Consumers,
        reconciler_loop: TickLoop,
        endpoint_url: str | None,
        scheduler_loop: TickLoop | None,
        scheduler_config: SchedulerConfig,
        env: dict[str, str],
    ) -> None:
        self.world = world
        self.deployments = deployments
        self.consumers = consumers
        self.endpoint_url = endpoint_url
        # The environment a process would use to reach this stack's AWS endpoint and resources
        # (empty for the in-memory World).
        self.env = env
        self._reconciler_loop = reconciler_loop
        self._scheduler_loop = scheduler_loop
        self._scheduler_config = scheduler_config
        self._scheduler = Scheduler(deployments.current, scheduler_config)

    @property
    def runtime(self) -> Runtime:
        """The newest deployment's runtime (new runs start on it)."""
        return self.deployments.current

    @property
    def reconciler(self) -> Reconciler:
        """The reconciler, which runs as the newest deployment (it releases held runs onto it)."""
        ticker = self._reconciler_loop.ticker
        assert isinstance(ticker, Reconciler)
        return ticker

    @property
    def scheduler(self) -> Scheduler:
        """The scheduler of the newest deployment's schedules."""
        return self._scheduler

    @property
    def deployment_id(self) -> str:
        """The newest deployment's id."""
        return self.runtime.world.deployment_id()

    def deploy(self, app: Workflows) -> str:
        """Start a new deployment of ``app`` and return its id.

        New runs (and the schedules' ticks) start on it; runs started before keep
        replaying on the app that started them. Runs held on older code are released
        onto it (``worker/holding.py``).
        """
        deployment_id = self.deployments.deploy(app)
        runtime = self.deployments.current
        self._reconciler_loop.ticker = Reconciler(runtime.world, self.reconciler.config)
        self._scheduler = Scheduler(runtime, self._scheduler_config)
        if self._scheduler_loop is not None:
            self._scheduler_loop.ticker = self._scheduler
        return deployment_id


def local_config() -> RuntimeConfig:
    """The environment's configuration, with replays checked cold (``RuntimeConfig.replay_checks``).

    A warm handler continues a suspended replay (``RuntimeConfig.replay_cache_runs``), which
    alone would hide a workflow that is not deterministic until a new Lambda container replays
    it. Locally the replay also starts over from the log whenever the log has doubled, and
    before the run's end is recorded, so such a run fails with ``NON_DETERMINISM`` naming both
    steps, while a long run stays linear (a cold replay per continuation is quadratic).
    """
    return replace(RuntimeConfig.from_env(), replay_checks=True)


def local_scheduler_config() -> SchedulerConfig:
    """The environment's scheduler configuration, passing every 5 s unless it says otherwise."""
    return SchedulerConfig.from_env(default_period_seconds=LOCAL_SCHEDULE_PERIOD_SECONDS)


@contextmanager
def local_stack(
    app: Workflows,
    *,
    kind: str = "embedded",
    config: RuntimeConfig | None = None,
    reconciler_config: ReconcilerConfig | None = None,
    scheduler_config: SchedulerConfig | None = None,
    run_schedules: bool = True,
    prestarted: MotoProcess | None = None,
    state_dir: Path | None = None,
    encrypt: bool = False,
) -> Iterator[LocalStack]:
    """Run ``app`` on a local World until the block exits (reconciler, consumers, then moto stop).

    ``config`` defaults to :func:`local_config` (replays checked cold);
    ``run_schedules=False`` leaves the app's schedules alone (``world-aws run``, one run).
    ``prestarted`` (embedded only): the stack already starting in a child process
    (``local/moto_process.py``); if it failed, one is started here instead.
    ``state_dir`` (embedded only): restore the stack's state from it and keep saving it
    there (``local/dev_state.py``); the stack is then started in this process.
    ``encrypt`` (embedded only): payloads are sealed under a moto KMS key made for the
    stack, as ``PayloadKmsKeyArn`` does on AWS (README "Security"); ``env`` names it
    (``WORKFLOW_KMS_KEY_ID``).
    """
    if state_dir is not None and kind != "embedded":
        raise BadInput("keeping state (--state) needs the embedded world, not the in-memory one")
    if encrypt and kind != "embedded":
        raise BadInput("encryption (--encrypt) needs the embedded world (moto's KMS), not the in-memory one")
    with ExitStack() as stack:
        endpoint: str | None = None
        env: dict[str, str] = {}
        release: Callable[[], None] | None = None
        if kind == "memory":
            from world_aws.local.memory import create_memory_world

            world: World = create_memory_world()
        elif kind == "embedded":
            from world_aws.aws.config import AwsConfig
            from world_aws.aws.local_clients import clients_for_endpoint, local_kms_key
            from world_aws.aws.world import create_aws_world
            from world_aws.local.embedded import EmbeddedAws

            child = prestarted
            state = None
            if state_dir is not None:  # locked first: a directory in use refuses before moto starts
                from world_aws.local.dev_state import keep_state, locked_state

                state = stack.enter_context(locked_state(state_dir))
                if child is not None:  # the state is restored in this process
                    child.stop()
                    child = None
            if child is not None:
                # This process's clients first: the child's stack builds itself meanwhile.
                clients = clients_for_endpoint(child.endpoint_url, child.region)
                report = _report_of(child)
                if report is None:
                    clients.close()
                    child = None
                else:
                    stack.callback(child.stop)
                    stack.callback(clients.close)
                    endpoint, env, release = child.endpoint_url, dict(report["env"]), child.release_long_polls
            if child is None:
                # Only what changes how the workflows run: moto never acts on PITR, TTL or bucket settings.
                aws = stack.enter_context(EmbeddedAws(apply_settings=False))
                if state is not None:  # restored now; saved last, once the consumers have stopped
                    stack.enter_context(keep_state(aws, state))
                endpoint, env, clients = aws.endpoint_url, aws.env(), aws.clients
                release = aws.app.release_long_polls
            if encrypt:
                env["WORKFLOW_KMS_KEY_ID"] = local_kms_key(clients)
            world = create_aws_world(AwsConfig.from_env(env), clients=clients)
        else:
            raise ValueError(f"unknown local world kind {kind!r}: use 'embedded' or 'memory'")
        stack.callback(world.close)
        world = FailureLog(world)  # each failed attempt logged with its traceback (world-aws dev shows it)
        deployments = LocalDeployments(world, app, config or local_config())
        stack.callback(deployments.close)
        consumers = world.start_consumers(deployments.handle)
        stack.callback(consumers.stop)
        if release is not None:  # first: the consumers' long polls answer now, so they stop at once
            stack.callback(release)
        reconciler = Reconciler(world, reconciler_config or ReconcilerConfig.from_env())
        loop = ReconcilerLoop(reconciler, reconciler.config.period_seconds).start()
        stack.callback(loop.stop)
        schedules = scheduler_config or local_scheduler_config()
        ticks: TickLoop | None = None
        if run_schedules and app.schedules:
            ticks = TickLoop(
                Scheduler(deployments.current, schedules),
                schedules.period_seconds,
                name="world-aws-scheduler",
            )
            stack.callback(ticks.start().stop)
        local = LocalStack(
            world=world,
            deployments=deployments,
            consumers=consumers,
            reconciler_loop=loop,
            endpoint_url=endpoint,
            scheduler_loop=ticks,
            scheduler_config=schedules,
            env=env,
        )
        if ticks is not None:
            ticks.ticker = local.scheduler
        yield local


def _report_of(prestarted: MotoProcess) -> dict[str, Any] | None:
    """The child stack's report, or None if it failed (logged and stopped: the stack starts here)."""
    try:
        return prestarted.report()
    except RuntimeError:
        LOG.warning("the embedded stack's process failed; starting it in this one", exc_info=True)
        prestarted.stop()
        return None
