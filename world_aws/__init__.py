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
    from world_aws.client.handle import RunHandle
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
    from world_aws.runtime.runtime import Runtime
    from world_aws.serde.limits import PayloadLimits
    from world_aws.worker.config import RuntimeConfig
    from world_aws.workflow.chain import ContinuedAsNew, continue_as_new
    from world_aws.workflow.coalesce import Batch, Debounce, Singleton
    from world_aws.workflow.context import (
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
    from world_aws.workflow.flow import Concurrency, RateLimit
    from world_aws.workflow.patching import deprecated_patch, patched
    from world_aws.workflow.registry import Workflows
    from world_aws.workflow.retry import Backoff
    from world_aws.workflow.schedules import Overlap
    from world_aws.workflow.streams import StreamWriter, get_writable
    from world_aws.workflow.typed_hooks import Hook, TypedHook

# Each public name and the module it comes from, imported on first use (PEP 562): the
# ``world-aws`` command starts its local stack before the runtime is imported (cli/).
_EXPORTS: dict[str, str] = {
    "Backoff": "world_aws.workflow.retry",
    "BadInput": "world_aws.errors",
    "Conflict": "world_aws.errors",
    "ContinuedAsNew": "world_aws.workflow.chain",
    "FatalError": "world_aws.errors",
    "Hook": "world_aws.workflow.typed_hooks",
    "HookConflictError": "world_aws.errors",
    "HookDisposedError": "world_aws.errors",
    "Misconfigured": "world_aws.errors",
    "NonDeterminismError": "world_aws.errors",
    "NotFound": "world_aws.errors",
    "Overlap": "world_aws.workflow.schedules",
    "Concurrency": "world_aws.workflow.flow",
    "RateLimit": "world_aws.workflow.flow",
    "Batch": "world_aws.workflow.coalesce",
    "Debounce": "world_aws.workflow.coalesce",
    "Singleton": "world_aws.workflow.coalesce",
    "PayloadLimits": "world_aws.serde.limits",
    "RetryableError": "world_aws.errors",
    "RunCancelledError": "world_aws.errors",
    "RunExpired": "world_aws.errors",
    "RunHandle": "world_aws.client.handle",
    "Runtime": "world_aws.runtime.runtime",
    "RuntimeConfig": "world_aws.worker.config",
    "SerializationError": "world_aws.errors",
    "StepFailedError": "world_aws.errors",
    "StepMetadata": "world_aws.workflow.context",
    "StepTimeoutError": "world_aws.errors",
    "StreamWriter": "world_aws.workflow.streams",
    "TypedHook": "world_aws.workflow.typed_hooks",
    "WorkflowFailedError": "world_aws.errors",
    "WorkflowMetadata": "world_aws.workflow.context",
    "Workflows": "world_aws.workflow.registry",
    "WorldAwsError": "world_aws.errors",
    "continue_as_new": "world_aws.workflow.chain",
    "create_hook": "world_aws.workflow.context",
    "deprecated_patch": "world_aws.workflow.patching",
    "get_step_metadata": "world_aws.workflow.context",
    "get_workflow_metadata": "world_aws.workflow.context",
    "get_writable": "world_aws.workflow.streams",
    "now": "world_aws.workflow.context",
    "patched": "world_aws.workflow.patching",
    "random": "world_aws.workflow.context",
    "sleep": "world_aws.workflow.context",
    "uuid4": "world_aws.workflow.context",
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
    "Batch",
    "Concurrency",
    "Conflict",
    "ContinuedAsNew",
    "Debounce",
    "FatalError",
    "Hook",
    "HookConflictError",
    "HookDisposedError",
    "Misconfigured",
    "NonDeterminismError",
    "NotFound",
    "Overlap",
    "PayloadLimits",
    "RateLimit",
    "RetryableError",
    "RunCancelledError",
    "RunExpired",
    "RunHandle",
    "Runtime",
    "RuntimeConfig",
    "SerializationError",
    "Singleton",
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
