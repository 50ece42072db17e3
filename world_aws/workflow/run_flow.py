"""Flow control as declared on a workflow: runs limited per key, rate limited, and their priority.

``@app.workflow(concurrency=Concurrency(2, key=lambda customer, *_: customer))`` lets at
most 2 runs of the workflow be live (started, not ended) at once per customer: the others
stay ``pending`` until a slot frees, higher ``priority`` first, first come first served
within a priority. ``rate_limit=RateLimit("10/min")`` lets at most 10 runs start in any
minute per key. ``priority`` is the default priority of the workflow's runs;
``start(..., priority=N)`` sets a run's own (recorded as the run's attribute
``$priority``). The workflow consumer admits a run before its first execution
(``world_aws.worker.run_admission``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from world_aws.errors import BadInput
from world_aws.workflow.flow import Concurrency, RateLimit, call_key

# The run attribute that records a run's priority (reserved: the runtime writes it).
PRIORITY_ATTRIBUTE = "$priority"


@dataclass(frozen=True, slots=True)
class RunFlow:
    """A workflow's flow control: a run concurrency, a start rate, the runs' default priority."""

    concurrency: Concurrency | None = None
    rate_limit: RateLimit | None = None
    priority: int = 0

    def __post_init__(self) -> None:
        check_priority(self.priority)

    @property
    def controlled(self) -> bool:
        """Whether a run of the workflow is admitted before it starts."""
        return self.concurrency is not None or self.rate_limit is not None

    def key(self, loads: Callable[[bytes], Any], data: bytes, *, where: str) -> str:
        """The flow-control key of a run whose serialized input is ``data``."""
        return call_key(loads, self.concurrency, self.rate_limit, data, where=where)

    def priority_of(self, attributes: dict[str, str]) -> int:
        """A run's priority: its own (``$priority``), else the workflow's default."""
        recorded = attributes.get(PRIORITY_ATTRIBUTE)
        if recorded is None:
            return self.priority
        try:
            return int(recorded)
        except ValueError:
            return self.priority


def check_priority(priority: object) -> int:
    """``priority`` if it is an int; raises BadInput naming it otherwise."""
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise BadInput(f"a run's priority must be an int, got {priority!r}")
    return priority


def run_scope(workflow_name: str, key: str) -> str:
    """The scope of a workflow's flow-control records (``world.admission``): one per name and key."""
    return f"workflow:{workflow_name}:{key}"


def is_run_scope(scope: str) -> bool:
    """Whether ``scope`` is a workflow's (its waiters' wakes are workflow messages)."""
    return scope.startswith("workflow:")
