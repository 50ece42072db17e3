"""The dev stack: a local World, its consumers and the HTTP API, as one long-running server.

``start_dev_stack(app, port=8787)`` starts :func:`world_aws.local.stack.local_stack`
(moto on 127.0.0.1 with the template's resources, the local event source
consuming both queues, and the reconciler's background thread) and serves the
HTTP API on ``127.0.0.1:port`` in front of it. ``world-aws dev`` runs it until
Ctrl-C; tests start it in-process on a free port and call :meth:`DevStack.stop`.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from world_aws.api.server import ApiServer, serve_api
from world_aws.local.stack import LocalStack, local_stack
from world_aws.worker.config import ReconcilerConfig, RuntimeConfig, SchedulerConfig
from world_aws.workflow.registry import Workflows

API_ENV = "WORLD_AWS_API"


class DevStack:
    """A running dev stack. Build it with :func:`start_dev_stack`; stop it with :meth:`stop`.

    Attributes:
        url: the HTTP API's base URL (``http://127.0.0.1:<port>``).
        endpoint_url: the moto endpoint (None on the in-memory World).
        stack: the local World, runtime and consumers behind the API.
    """

    def __init__(self, stack: LocalStack, server: ApiServer, resources: ExitStack) -> None:
        self.stack = stack
        self.url = server.url
        self.endpoint_url = stack.endpoint_url
        self._resources = resources

    def env(self) -> dict[str, str]:
        """What a shell should export to use this stack: ``WORLD_AWS_API``, AWS_* and WORKFLOW_*."""
        return {API_ENV: self.url, **self.stack.env}

    def stop(self) -> None:
        """Stop the HTTP server, then the consumers, the runtime, the World and moto. Idempotent."""
        self._resources.close()

    def __enter__(self) -> DevStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_dev_stack(
    app: Workflows,
    *,
    port: int = 0,
    kind: str = "embedded",
    config: RuntimeConfig | None = None,
    reconciler_config: ReconcilerConfig | None = None,
    scheduler_config: SchedulerConfig | None = None,
    encrypt: bool = False,
    state_dir: Path | None = None,
) -> DevStack:
    """Start ``app`` on a local World with its HTTP API on ``127.0.0.1:port``.

    Args:
        app: the workflows to serve.
        port: the API's port; 0 picks a free one (read it from ``.url``).
        kind: ``"embedded"`` (moto, the default) or ``"memory"`` (the in-memory World).
        config: runtime configuration (``RuntimeConfig.from_env()`` by default).
        reconciler_config: the reconciler's (``ReconcilerConfig.from_env()`` by default); it
            ticks on a background thread, stopped with the stack.
        scheduler_config: the scheduler's (every 5 s locally unless
            ``WORKFLOW_SCHEDULE_PERIOD_SECONDS`` says otherwise); it passes on a background
            thread when the app has schedules.
        encrypt: seal payloads under a moto KMS key (``local_stack``; embedded only).
        state_dir: keep the stack's state in this directory across restarts (embedded only;
            ``local/dev_state.py``); None keeps nothing.

    Raises:
        OSError: the port cannot be bound; nothing is left running.
        BadInput: the state directory is locked by another stack, or unreadable.
    """
    resources = ExitStack()
    try:
        stack = resources.enter_context(
            local_stack(
                app,
                kind=kind,
                config=config,
                reconciler_config=reconciler_config,
                scheduler_config=scheduler_config,
                encrypt=encrypt,
                state_dir=state_dir,
            )
        )
        # Registered last, so it stops first: no request arrives while the stack shuts down.
        server = serve_api(lambda: stack.runtime, port=port)  # the newest deployment's
        resources.callback(server.stop)
    except BaseException:
        resources.close()
        raise
    return DevStack(stack, server, resources)
