"""What a debounce window, a batch or a singleton key holds now, in words (``GET .../gates/{key}``).

"debounced: run `wrun_...` starts at 12:00:30 unless key `ann` is started again",
"batching: run `wrun_...` holds 2 of 100 items; starts at 12:00:05 or when full",
"held by run `wrun_...` (running)", read from the World's gate record (``world.gates``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from world_aws.contract.records import ResolveData
from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound
from world_aws.workflow.coalesce import gate_scope
from world_aws.workflow.registry import Workflows


@dataclass(slots=True)
class GateInfo:
    """One key's gate: the open window or batch, the runs being started, a singleton's holder."""

    workflow: str
    kind: str
    key: str
    waiting: str
    run_id: str | None = None  # the open window's or batch's run (its callers' handles name it)
    due: datetime | None = None
    items: int = 0
    starting: list[str] = field(default_factory=list)
    live_run_id: str | None = None
    live_status: str | None = None


def describe_gate(world: World, app: Workflows, workflow: str, key: str) -> GateInfo:
    """The gate of ``workflow``'s ``key`` ("*" for a workflow without a key function).

    Raises:
        UnknownWorkflow: no such workflow. BadInput: it has no debounce, batch or singleton.
    """
    wf = app.get_workflow(workflow)
    gate = wf.gate
    if gate is None:
        raise BadInput(f"workflow {workflow!r} has no debounce, batch or singleton")
    record = world.gates.get(gate_scope(gate.kind, workflow, key))
    starting = [p.run_id for p in record.closed]
    info = GateInfo(workflow, gate.kind, key, waiting="", starting=starting)
    if record.open is not None:
        pending = record.open
        info.run_id, info.due, info.items = pending.run_id, pending.due, len(pending.items)
        if gate.batch is not None:
            info.waiting = (
                f"batching: run `{pending.run_id}` holds {len(pending.items)} of {gate.batch.max_size} "
                f"items; starts at {pending.due:%H:%M:%S} or when full"
            )
        else:
            info.waiting = (
                f"debounced: run `{pending.run_id}` starts at {pending.due:%H:%M:%S} "
                f"unless key `{key}` is started again"
            )
    elif starting:
        info.waiting = f"starting run `{starting[0]}`"
    elif record.live:
        info.live_run_id = record.live
        try:
            info.live_status = world.runs.get(record.live, resolve_data=ResolveData.NONE).status.value
        except NotFound:
            info.live_status = "pending"
        if info.live_status in ("pending", "running"):
            info.waiting = f"held by run `{record.live}` ({info.live_status})"
        else:
            info.waiting = f"free (its last run `{record.live}` is {info.live_status})"
    else:
        info.waiting = "free"
    return info
