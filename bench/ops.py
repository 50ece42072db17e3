"""World operations as the benchmark names them, and a proxy that brackets each one.

An *op* is one call of a World store method by the runtime: ``runs.get``,
``steps.any_pending``, ``blobs.put``, ... Two are keyed finer, because their cost
depends on the argument:

* ``events.create:<event type>`` (``events.create:step_started``): each event type
  takes its own path through the AWS World (judge, reserve, commit; or fewer);
* ``queue.publish:keyed`` / ``queue.publish:unkeyed``: an idempotency key costs a
  DynamoDB claim and record around the SQS send (contract §4.4).

``OpProxy`` wraps one store so that every public method call runs inside
``enter(key)``: the moto pass enters ``CallRecorder.op`` (attributing the AWS calls
the op makes), the model pass also sleeps the op's measured round trips there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from world_aws.contract.records import EventRequest

OpEnter = Callable[[str], AbstractContextManager[None]]

# Separates a method from the qualifier of its key (``events.create:step_started``).
QUALIFIER = ":"


def op_key(store: str, method: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The key of one store call: ``<store>.<method>``, qualified for events.create and queue.publish.

    Args:
        store: the World attribute (``events``, ``runs``, ``queue``, ...).
        method: the method called.
        args: its positional arguments (without ``self``).
        kwargs: its keyword arguments.
    """
    name = f"{store}.{method}"
    if name == "events.create":
        request = args[1] if len(args) > 1 else kwargs["request"]
        assert isinstance(request, EventRequest)
        return f"{name}{QUALIFIER}{request.type.value}"
    if name == "queue.publish":
        keyed = kwargs.get("idempotency_key") is not None
        return f"{name}{QUALIFIER}{'keyed' if keyed else 'unkeyed'}"
    return name


def method_of(key: str) -> str:
    """``events.create:step_started`` -> ``events.create``."""
    return key.split(QUALIFIER, 1)[0]


class OpProxy:
    """One World store whose public methods each run inside ``enter(op_key(...))``.

    Typed loosely on purpose: it stands in for any store protocol (the caller casts),
    so that every method the runtime uses, now or later, is bracketed without a
    hand-written wrapper per method.

    Args:
        store: the World attribute it stands for (``events``, ``queue``, ...).
        inner: the store it forwards to.
        enter: the context to run each call in, given the call's op key.
    """

    def __init__(self, store: str, inner: object, enter: OpEnter) -> None:
        self._store = store
        self._inner = inner
        self._enter = enter

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name.startswith("_") or not callable(attribute):
            return attribute
        method: Callable[..., Any] = attribute

        def bracketed(*args: Any, **kwargs: Any) -> Any:
            with self._enter(op_key(self._store, name, args, kwargs)):
                return method(*args, **kwargs)

        return bracketed
