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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from world_aws.runtime.patching import deprecated_patch, patched
    from world_aws.runtime.registry import Workflows
    from world_aws.runtime.retry import Backoff
    from world_aws.runtime.runtime import Runtime
    from world_aws.runtime.schedules import Overlap
    from world_aws.runtime.serde_limits import PayloadLimits
    from world_aws.runtime.streams import StreamWriter, get_writable
    from world_aws.runtime.typed_hooks import Hook, TypedHook

# Each public name and the module it comes from, imported on first use (PEP 562): the
# ``world-aws`` command starts its local stack before the runtime is imported (cli/).
_EXPORTS: dict[str, str] = {
    "Backoff": "world_aws.runtime.retry",
    "BadInput": "world_aws.errors",
    "Conflict": "world_aws.errors",
    "ContinuedAsNew": "world_aws.runtime.chain",
    "FatalError": "world_aws.errors",
    "Hook": "world_aws.runtime.typed_hooks",
    "HookConflictError": "world_aws.errors",
    "HookDisposedError": "world_aws.errors",
    "Misconfigured": "world_aws.errors",
    "NonDeterminismError": "world_aws.errors",
    "NotFound": "world_aws.errors",
    "Overlap": "world_aws.runtime.schedules",
    "PayloadLimits": "world_aws.runtime.serde_limits",
    "RetryableError": "world_aws.errors",
    "RunCancelledError": "world_aws.errors",
    "RunExpired": "world_aws.errors",
    "RunHandle": "world_aws.runtime.handle",
    "Runtime": "world_aws.runtime.runtime",
    "RuntimeConfig": "world_aws.runtime.config",
    "SerializationError": "world_aws.errors",
    "StepFailedError": "world_aws.errors",
    "StepMetadata": "world_aws.runtime.context",
    "StepTimeoutError": "world_aws.errors",
    "StreamWriter": "world_aws.runtime.streams",
    "TypedHook": "world_aws.runtime.typed_hooks",
    "WorkflowFailedError": "world_aws.errors",
    "WorkflowMetadata": "world_aws.runtime.context",
    "Workflows": "world_aws.runtime.registry",
    "WorldAwsError": "world_aws.errors",
    "continue_as_new": "world_aws.runtime.chain",
    "create_hook": "world_aws.runtime.context",
    "deprecated_patch": "world_aws.runtime.patching",
    "get_step_metadata": "world_aws.runtime.context",
    "get_workflow_metadata": "world_aws.runtime.context",
    "get_writable": "world_aws.runtime.streams",
    "now": "world_aws.runtime.context",
    "patched": "world_aws.runtime.patching",
    "random": "world_aws.runtime.context",
    "sleep": "world_aws.runtime.context",
    "uuid4": "world_aws.runtime.context",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'world_aws' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
    "deprecated_patch",
    "get_step_metadata",
    "get_workflow_metadata",
    "get_writable",
    "now",
    "patched",
    "random",
    "sleep",
    "uuid4",
]
