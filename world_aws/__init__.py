"""world-aws: durable async Python workflows on AWS serverless.

Authoring::

    from world_aws import Workflows, sleep, create_hook, FatalError, RetryableError

    app = Workflows()

    @app.step(max_retries=3)
    async def charge(order_id: str, cents: int) -> str: ...

    @app.workflow
    async def checkout(order_id: str) -> dict: ...

Running: bind the app to a World with ``Runtime(world, app)`` and call
``runtime.start(checkout, "order-1")``; or use the ``world-aws`` CLI.
"""

from __future__ import annotations

from world_aws.errors import (
    BadInput,
    Conflict,
    FatalError,
    HookConflictError,
    HookDisposedError,
    Misconfigured,
    NonDeterminismError,
    NotFound,
    RetryableError,
    RunCancelledError,
    RunExpired,
    SerializationError,
    StepFailedError,
    WorkflowFailedError,
    WorldAwsError,
)
from world_aws.runtime.config import RuntimeConfig
from world_aws.runtime.context import (
    StepMetadata,
    WorkflowMetadata,
    create_hook,
    get_step_metadata,
    get_workflow_metadata,
    now,
    random,
    sleep,
    uuid4,
)
from world_aws.runtime.handle import RunHandle
from world_aws.runtime.registry import Workflows
from world_aws.runtime.retry import Backoff
from world_aws.runtime.runtime import Runtime
from world_aws.runtime.serde_limits import PayloadLimits
from world_aws.runtime.streams import StreamWriter, get_writable
from world_aws.runtime.typed_hooks import Hook, TypedHook

__all__ = [
    "Backoff",
    "BadInput",
    "Conflict",
    "FatalError",
    "Hook",
    "HookConflictError",
    "HookDisposedError",
    "Misconfigured",
    "NonDeterminismError",
    "NotFound",
    "PayloadLimits",
    "RetryableError",
    "RunCancelledError",
    "RunExpired",
    "RunHandle",
    "Runtime",
    "RuntimeConfig",
    "SerializationError",
    "StepFailedError",
    "StepMetadata",
    "StreamWriter",
    "TypedHook",
    "WorkflowFailedError",
    "WorkflowMetadata",
    "Workflows",
    "WorldAwsError",
    "create_hook",
    "get_step_metadata",
    "get_workflow_metadata",
    "get_writable",
    "now",
    "random",
    "sleep",
    "uuid4",
]
