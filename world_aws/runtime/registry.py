"""The ``Workflows`` registry: where a user's workflows and steps are declared.

The registry lives on an instance (SPEC §8.1, §9), never in module globals, so
two apps in one process do not see each other's functions.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from world_aws.errors import BadInput, UnknownWorkflow
from world_aws.runtime import context
from world_aws.runtime.retry import DEFAULT_BACKOFF, Backoff
from world_aws.runtime.serde import Serializer
from world_aws.runtime.serde_limits import PayloadLimits
from world_aws.runtime.signature_types import convert_arguments, parameter_types, serializable_types
from world_aws.runtime.typed_hooks import Hook, hook_types_in

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_MAX_RETRIES = 3


@dataclass(frozen=True, slots=True)
class StepOptions:
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff: Backoff = DEFAULT_BACKOFF


class StepDecorator(Protocol):
    """What ``@app.step(max_retries=..., backoff=..., name=...)`` returns: typed like ``@app.step``."""

    @overload
    def __call__(self, fn: Callable[P, Awaitable[R]], /) -> StepFunction[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> StepFunction[P, R]: ...


class StepFunction(Generic[P, R]):
    """A registered step. Inside a workflow a call is a durable step; outside it runs directly."""

    def __init__(self, fn: Callable[P, Any], name: str, options: StepOptions) -> None:
        self.fn = fn
        self.name = name
        self.options = options
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature = inspect.signature(fn)
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[R]:
        replay = context.current_replay()
        if replay is not None:
            return cast(Awaitable[R], replay.call_step(self, args, kwargs))
        return _run_directly(self, args, kwargs)

    def run_body(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Execute the body on the calling thread (a step consumer); returns its result."""
        if self.is_async:
            return asyncio.run(self.fn(*args, **kwargs))
        return self.fn(*args, **kwargs)


async def _run_directly(step: StepFunction[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if step.is_async:
        return await step.fn(*args, **kwargs)
    return step.fn(*args, **kwargs)


class WorkflowFunction(Generic[P, R]):
    """A registered workflow: an ``async def`` replayed from its run's event log."""

    def __init__(self, fn: Callable[P, Awaitable[R]], name: str, app: Workflows) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise BadInput(f"workflow {name!r} must be an async def function")
        self.fn = fn
        self.name = name
        self.app = app
        self.signature = inspect.signature(fn)
        self.hints = parameter_types(fn)
        functools.update_wrapper(self, fn)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Check that the arguments fit the workflow's signature.

        Raises:
            BadInput: naming the workflow and the problem.
        """
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise BadInput(f"arguments do not fit workflow {self.name!r}{self.signature}: {exc}") from exc

    def convert(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Arguments that came as JSON (CLI, HTTP API), converted to the annotated parameter types.

        Raises:
            BadInput: they do not bind, or one does not fit its annotation (naming the parameter).
        """
        return convert_arguments(f"workflow {self.name!r}", self.signature, self.hints, args, kwargs)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Awaitable[R]:
        return self.fn(*args, **kwargs)


class Workflows:
    """A set of workflows and steps, and the serializer for the values they pass.

    Example::

        app = Workflows()

        @app.step(max_retries=5)
        async def charge(order_id: str) -> str: ...

        @app.workflow
        async def checkout(order_id: str) -> str:
            return await charge(order_id)
    """

    def __init__(self, *, types: Iterable[type] = (), limits: PayloadLimits | None = None) -> None:
        """Create an app; ``types`` are registered on its serializer, ``limits`` cap value sizes."""
        self._workflows: dict[str, WorkflowFunction[Any, Any]] = {}
        self._steps: dict[str, StepFunction[Any, Any]] = {}
        self._hook_types: dict[str, type[Hook]] = {}
        self.serializer = Serializer(types, limits=limits)

    # --- declaration ----------------------------------------------------------------

    @overload
    def workflow(self, fn: Callable[P, Awaitable[R]], /) -> WorkflowFunction[P, R]: ...

    @overload
    def workflow(
        self, *, name: str | None = None
    ) -> Callable[[Callable[P, Awaitable[R]]], WorkflowFunction[P, R]]: ...

    def workflow(self, fn: Any = None, /, *, name: str | None = None) -> Any:  # type: ignore[misc]
        def register(f: Callable[P, Awaitable[R]]) -> WorkflowFunction[P, R]:
            wf_name = name or f.__name__
            if wf_name in self._workflows:
                raise BadInput(f"a workflow named {wf_name!r} is already registered")
            wf = WorkflowFunction(f, wf_name, self)
            self._register_types(wf.hints)
            for hook_type in hook_types_in(f):
                self.register_type(hook_type)
            self._workflows[wf_name] = wf
            return wf

        return register(fn) if fn is not None else register

    # An async step's result type is what its coroutine returns, a sync step's what it
    # returns: ``await step(...)`` has that type either way (the async overload comes first).
    @overload
    def step(self, fn: Callable[P, Awaitable[R]], /) -> StepFunction[P, R]: ...

    @overload
    def step(self, fn: Callable[P, R], /) -> StepFunction[P, R]: ...

    @overload
    def step(
        self,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: Backoff | None = None,
        name: str | None = None,
    ) -> StepDecorator: ...

    def step(  # type: ignore[misc]
        self,
        fn: Any = None,
        /,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: Backoff | None = None,
        name: str | None = None,
    ) -> Any:
        """Declare a step: ``@app.step`` or ``@app.step(max_retries=5, backoff=Backoff(initial=2))``.

        Args:
            max_retries: retries after the first attempt before the step fails for good
                (``StepFailedError`` in the workflow). Retries never count against the
                queue delivery cap.
            backoff: the delays between attempts (default: ``Backoff()``, 1 s doubling up to
                5 min, with jitter); a ``RetryableError(retry_after=...)`` overrides it.
            name: the step's durable name (default: ``module.qualname``).
        """
        if max_retries < 0:
            raise BadInput(f"max_retries must be >= 0, got {max_retries}")
        options = StepOptions(max_retries=max_retries, backoff=backoff or DEFAULT_BACKOFF)

        def register(f: Callable[P, Any]) -> StepFunction[P, Any]:
            step_name = name or f"{f.__module__}.{f.__qualname__}"
            if step_name in self._steps:
                raise BadInput(f"a step named {step_name!r} is already registered")
            self._register_types(parameter_types(f))
            st: StepFunction[P, Any] = StepFunction(f, step_name, options)
            self._steps[step_name] = st
            return st

        return register(fn) if fn is not None else register

    def _register_types(self, hints: dict[str, Any]) -> None:
        """Register the Enum, dataclass and pydantic types a signature names (no manual registration)."""
        for cls in serializable_types(hints):
            self.serializer.register(cls)

    def register_type(self, cls: type[R]) -> type[R]:
        """Register a dataclass, pydantic model or Enum for serialization (usable as a decorator).

        A typed hook class (``world_aws.Hook``) is also looked up by name when a resume
        of one of its hooks is validated.
        """
        self.serializer.register(cls)
        if isinstance(cls, type) and issubclass(cls, Hook):
            self._hook_types[cls.hook_type_name()] = cls
        return cls

    def hook_type(self, name: str) -> type[Hook] | None:
        """The typed hook class registered under ``name`` (``module:qualname``), if any."""
        return self._hook_types.get(name)

    def with_steps_replaced(
        self, replacements: Mapping[StepFunction[Any, Any] | str, Callable[..., Any]]
    ) -> Workflows:
        """A copy of this app whose named steps run other bodies (a test's fakes).

        The workflows, the other steps and the serializer are shared with this app; a
        replaced step keeps its name and options, so the workflow code calling it and
        the run's log are unchanged.

        Raises:
            BadInput: a step that is not registered here.
        """
        copy = Workflows.__new__(Workflows)
        copy._workflows = self._workflows
        copy.serializer = self.serializer
        copy._hook_types = self._hook_types
        copy._steps = dict(self._steps)
        for key, fn in replacements.items():
            name = key if isinstance(key, str) else key.name
            original = self._steps.get(name)
            if original is None:
                known = ", ".join(sorted(self._steps)) or "none"
                raise BadInput(f"cannot replace unknown step {name!r} (registered: {known})")
            copy._steps[name] = StepFunction(fn, name, original.options)
        return copy

    # --- lookup ---------------------------------------------------------------------

    def get_workflow(self, name: str) -> WorkflowFunction[Any, Any]:
        try:
            return self._workflows[name]
        except KeyError:
            known = ", ".join(sorted(self._workflows)) or "none"
            raise UnknownWorkflow(f"unknown workflow {name!r} (registered: {known})") from None

    def get_step(self, name: str) -> StepFunction[Any, Any] | None:
        return self._steps.get(name)

    @property
    def workflow_names(self) -> list[str]:
        return sorted(self._workflows)
