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
    StepTimeoutError,
    WorkflowFailedError,
    WorldAwsError,
)
from world_aws.runtime.chain import ContinuedAsNew, continue_as_new
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
from world_aws.runtime.schedules import Overlap
from world_aws.runtime.serde_limits import PayloadLimits
from world_aws.runtime.streams import StreamWriter, get_writable
from world_aws.runtime.typed_hooks import Hook, TypedHook

__all__ = [
    "Backoff",
    "BadInput",
    "Conflict",
    "ContinuedAsNew",
    "FatalError",
    "Hook",
    "HookConflictError",
    "HookDisposedError",
    "Misconfigured",
    "NonDeterminismError",
    "NotFound",
    "Overlap",
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
    "StepTimeoutError",
    "StreamWriter",
    "TypedHook",
    "WorkflowFailedError",
    "WorkflowMetadata",
    "Workflows",
    "WorldAwsError",
    "continue_as_new",
    "create_hook",
    "get_step_metadata",
    "get_workflow_metadata",
    "get_writable",
    "now",
    "random",
    "sleep",
    "uuid4",
]
