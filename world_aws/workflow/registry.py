"""The ``Workflows`` registry: where a user's workflows and steps are declared.

The registry lives on an instance (contract §8.1, §9), never in module globals, so
two apps in one process do not see each other's functions.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, cast, overload

from world_aws.errors import BadInput, UnknownWorkflow
from world_aws.serde.codec import Serializer
from world_aws.serde.limits import PayloadLimits
from world_aws.workflow import context
from world_aws.workflow.chain import CONTINUED_AS_NEW_TYPE, ContinuedAsNew
from world_aws.workflow.coalesce import Batch, Debounce, Singleton, StartGate
from world_aws.workflow.flow import Concurrency, RateLimit
from world_aws.workflow.retention import FOREVER, Retention, retention_attributes, retention_seconds
from world_aws.workflow.retry import DEFAULT_BACKOFF, Backoff
from world_aws.workflow.run_flow import RunFlow
from world_aws.workflow.schedules import MAX_SCHEDULE_ARGS_BYTES, Overlap, Schedule, make_schedule
from world_aws.workflow.signature_types import convert_arguments, parameter_types, serializable_types
from world_aws.workflow.typed_hooks import Hook, hook_types_in

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_MAX_RETRIES = 3


@dataclass(frozen=True, slots=True)
class StepOptions:
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff: Backoff = DEFAULT_BACKOFF
    # Seconds an attempt may run (worker/step_timeout.py); None: bounded only by its invocation.
    timeout_seconds: float | None = None
    # Flow control (workflow/flow.py): slots per key and starts per period per key.
    concurrency: Concurrency | None = None
    rate_limit: RateLimit | None = None

    @property
    def flow_controlled(self) -> bool:
        """Whether an attempt must be admitted first (such a step is never run inline)."""
        return self.concurrency is not None or self.rate_limit is not None


class StepDecorator(Protocol):
    """What ``@app.step(max_retries=..., backoff=..., name=...)`` returns: typed like ``@app.step``."""

    @overload
    def __call__(self, fn: Callable[P, Awaitable[R]], /) -> StepFunction[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> StepFunction[P, R]: ...


class StepFunction(Generic[P, R]):
    """A registered step. Inside a workflow a call is a durable step (awaited); outside it runs directly.

    Outside a workflow (a script, a test, another step's body) the step is its own
    function, as contract §8.1 says: a ``def`` step runs at the call and returns its
    result, an ``async def`` step returns its coroutine. The call is typed for the
    workflow side (``await charge(...)``); ``step.fn`` is the function itself.
    """

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
        return cast(Awaitable[R], self.fn(*args, **kwargs))  # the undecorated function's own answer


class WorkflowFunction(Generic[P, R]):
    """A registered workflow: an ``async def`` replayed from its run's event log."""

    def __init__(
        self, fn: Callable[P, Awaitable[R]], name: str, app: Workflows, retention: Retention = None
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise BadInput(f"workflow {name!r} must be an async def function")
        self.fn = fn
        self.name = name
        self.app = app
        # Its own retention (workflow/retention.py): None follows the app's, "forever" keeps.
        self.retention = retention
        self.flow = RunFlow()  # runs' concurrency, rate and priority (workflow/run_flow.py)
        self.retention_seconds = retention_seconds(retention, where=f"workflow {name!r} retention")
        self.signature = inspect.signature(fn)
        self.hints = parameter_types(fn)
        # Flow control of its starts (workflow/coalesce.py): debounce, batch or singleton.
        self.gate: StartGate | None = None
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
        """Inside a workflow: start this workflow as a child run and await its result."""
        replay = context.current_replay()
        if replay is not None:
            return cast(Awaitable[R], replay.call_child(self, args, kwargs))
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

    def __init__(
        self, *, types: Iterable[type] = (), limits: PayloadLimits | None = None, retention: Retention = None
    ) -> None:
        """Create an app; ``types`` are registered on its serializer, ``limits`` cap value sizes.

        ``retention``: how long an ended run's data is kept (``"30d"``, a ``timedelta``, whole
        seconds; None keeps it forever); a workflow's own setting wins (README "Retention").
        """
        self.retention_seconds = retention_seconds(retention)
        self._workflows: dict[str, WorkflowFunction[Any, Any]] = {}
        self._steps: dict[str, StepFunction[Any, Any]] = {}
        self._schedules: dict[str, Schedule] = {}
        self._hook_types: dict[str, type[Hook]] = {}
        self.serializer = Serializer(types, limits=limits)
        self.serializer.register(ContinuedAsNew, name=CONTINUED_AS_NEW_TYPE)

    # --- declaration ----------------------------------------------------------------

    @overload
    def workflow(self, fn: Callable[P, Awaitable[R]], /) -> WorkflowFunction[P, R]: ...

    @overload
    def workflow(
        self,
        *,
        name: str | None = None,
        schedule: str | None = None,
        overlap: Overlap | str = Overlap.SKIP,
        retention: Retention = None,
        debounce: Debounce | None = None,
        batch: Batch | None = None,
        singleton: Singleton | bool | None = None,
        concurrency: Concurrency | None = None,
        rate_limit: RateLimit | None = None,
        priority: int = 0,
    ) -> Callable[[Callable[P, Awaitable[R]]], WorkflowFunction[P, R]]: ...

    def workflow(  # type: ignore[misc]
        self,
        fn: Any = None,
        /,
        *,
        name: str | None = None,
        schedule: str | None = None,
        overlap: Overlap | str = Overlap.SKIP,
        retention: Retention = None,
        debounce: Debounce | None = None,
        batch: Batch | None = None,
        singleton: Singleton | bool | None = None,
        concurrency: Concurrency | None = None,
        rate_limit: RateLimit | None = None,
        priority: int = 0,
    ) -> Any:
        """Declare a workflow: ``@app.workflow`` or ``@app.workflow(name=..., schedule=...)``.

        Args:
            name: the workflow's durable name (default: the function's name).
            schedule: ``"rate(5 minutes)"`` or ``"cron(0 12 * * ? *)"`` (EventBridge
                syntax, UTC): the scheduler starts the workflow, without arguments, once
                per tick (a schedule named after the workflow; see :meth:`schedule`).
            overlap: ``"skip"`` or ``"allow"`` a tick while the previous tick's run goes on.
            retention: how long this workflow's ended runs are kept (``"7d"``; ``"forever"``;
                None: the app's ``retention``).
            debounce: collapse a key's starts within a window into one run with the last
                arguments (``Debounce``; README "Flow control").
            batch: gather starts into one run of the list of their items (``Batch``).
            singleton: at most one live run per key (``True`` or ``Singleton``).
            concurrency, rate_limit, priority: flow control of the runs (``workflow/run_flow.py``):
                live runs at once per key (the others stay pending), starts per period per
                key, the default priority among runs waiting for a slot.
        """
        flow = RunFlow(concurrency, rate_limit, priority)

        def register(f: Callable[P, Awaitable[R]]) -> WorkflowFunction[P, R]:
            wf_name = name or f.__name__
            if wf_name in self._workflows:
                raise BadInput(f"a workflow named {wf_name!r} is already registered")
            wf = WorkflowFunction(f, wf_name, self, retention)
            wf.gate = StartGate.of(wf_name, debounce, batch, singleton)
            wf.flow = flow
            self._register_types(wf.hints)
            for hook_type in hook_types_in(f):
                self.register_type(hook_type)
            self._workflows[wf_name] = wf
            if schedule is not None:
                self.schedule(wf, schedule, overlap=overlap)
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
        timeout: str | float | timedelta | None = None,
        concurrency: Concurrency | None = None,
        rate_limit: RateLimit | None = None,
    ) -> StepDecorator: ...

    def step(  # type: ignore[misc]
        self,
        fn: Any = None,
        /,
        *,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: Backoff | None = None,
        name: str | None = None,
        timeout: str | float | timedelta | None = None,
        concurrency: Concurrency | None = None,
        rate_limit: RateLimit | None = None,
    ) -> Any:
        """Declare a step: ``@app.step`` or ``@app.step(max_retries=5, backoff=Backoff(initial=2))``.

        Args:
            max_retries: retries after the first attempt before the step fails for good
                (``StepFailedError`` in the workflow). Retries never count against the
                queue delivery cap.
            backoff: the delays between attempts (default: ``Backoff()``, 1 s doubling up to
                5 min, with jitter); a ``RetryableError(retry_after=...)`` overrides it.
            name: the step's durable name (default: ``module.qualname``).
            timeout: how long one attempt may run ("30s", "5m", seconds, a timedelta): an
                attempt still running then is a failed attempt (``StepTimeoutError``, retried
                by the policy) and its late outcome is discarded. Without it an attempt is
                bounded only by its invocation (a Lambda's timeout, less a hand-off margin).
            concurrency: at most ``limit`` attempts at once per key, across every consumer
                and run (``Concurrency``); waiting holds no consumer.
            rate_limit: at most N attempts started per period per key (``RateLimit``).
        """
        if max_retries < 0:
            raise BadInput(f"max_retries must be >= 0, got {max_retries}")
        timeout_seconds = None if timeout is None else context.parse_duration(timeout)
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise BadInput(f"timeout must be positive, got {timeout!r}")
        options = StepOptions(
            max_retries=max_retries,
            backoff=backoff or DEFAULT_BACKOFF,
            timeout_seconds=timeout_seconds,
            concurrency=concurrency,
            rate_limit=rate_limit,
        )

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

    def schedule(
        self,
        workflow: WorkflowFunction[Any, Any] | str,
        expression: str,
        *,
        name: str | None = None,
        overlap: Overlap | str = Overlap.SKIP,
        catch_up: int = 1,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Schedule:
        """Start ``workflow(*args, **kwargs)`` once per tick of ``expression``.

        Args:
            workflow: a workflow of this app, or its name.
            expression: ``rate(N minutes|hours|days)`` or ``cron(6 fields)``, EventBridge
                syntax, in UTC; a rate ticks at multiples of its period since the epoch.
            name: the schedule's name, unique in the app (default: the workflow's name).
            overlap: ``"skip"`` (default) does not start a tick while the run of the
                previous tick started is pending or running; ``"allow"`` does.
            catch_up: after a gap in the scheduler's passes, start at most this many of
                the due ticks (the most recent); the older ones are counted as missed.
            args: positional arguments of every run.
            kwargs: keyword arguments of every run (with ``args``, at most 32 KiB serialized).

        Raises:
            BadInput: an unknown workflow, a duplicate name, an invalid expression or
                policy, or arguments that do not fit the workflow.
        """
        wf = self.get_workflow(workflow if isinstance(workflow, str) else workflow.name)
        wf.bind(tuple(args), dict(kwargs or {}))
        data = self.serializer.dumps(
            {"args": list(args), "kwargs": dict(kwargs or {})},
            context=f"arguments of schedule of {wf.name!r}",
        )
        if len(data) > MAX_SCHEDULE_ARGS_BYTES:
            raise BadInput(
                f"the arguments of a schedule of {wf.name!r} serialize to {len(data)} bytes; at most "
                f"{MAX_SCHEDULE_ARGS_BYTES} (the scheduler has no payload storage: pass a key, not the data)"
            )
        declared = make_schedule(
            wf.name, expression, name=name, overlap=overlap, catch_up=catch_up, args=args, kwargs=kwargs
        )
        if declared.name in self._schedules:
            raise BadInput(f"a schedule named {declared.name!r} is already registered")
        self._schedules[declared.name] = declared
        return declared

    @property
    def schedules(self) -> list[Schedule]:
        """The app's schedules, by name."""
        return [self._schedules[n] for n in sorted(self._schedules)]

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
        copy._schedules = self._schedules
        copy.serializer = self.serializer
        copy._hook_types = self._hook_types
        copy.retention_seconds = self.retention_seconds
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

    def retention_attributes(self, workflow_name: str) -> dict[str, str]:
        """The run attributes recording the retention of a new run of ``workflow_name``.

        The workflow's own retention, else the app's; none for a workflow this app does not
        know (a child of another app's code keeps what its own code would say: forever).
        """
        wf = self._workflows.get(workflow_name)
        if wf is None:
            return {}
        if wf.retention == FOREVER:
            return {}
        seconds = wf.retention_seconds if wf.retention is not None else self.retention_seconds
        return retention_attributes(seconds)

    @property
    def workflow_names(self) -> list[str]:
        return sorted(self._workflows)
