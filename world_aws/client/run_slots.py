"""Giving a run's concurrency slot back when it ends (``@app.workflow(concurrency=...)``).

Every way a run ends calls :func:`release_run_slot` after its terminal event is
written: its workflow's end (completed, failed, continued as new), ``fail_run`` (the
delivery cap, an unknown workflow, a deployment mismatch...), a client's cancel (and
a parent's cancel of its children). The release leaves the line too (a run cancelled
while it waited) and publishes the workflow messages of the runs it wakes. It is best
effort: a release lost to a crash is made by the next arrival's audit once the holder's
lease has passed (``worker/run_admission.py``), as a run's end can never be undone.
"""

from __future__ import annotations

from world_aws.contract.records import ResolveData, Run
from world_aws.contract.world import QueueName, World
from world_aws.errors import NotFound, UnknownWorkflow
from world_aws.observe import telemetry
from world_aws.workflow.registry import Workflows
from world_aws.workflow.run_flow import run_scope


def run_slot_scope(world: World, app: Workflows, run: Run, data: bytes | None = None) -> str | None:
    """The scope of ``run``'s concurrency slot (None: its workflow has no run concurrency).

    ``data``: the run's input if the caller has it (else the run's, read if it came without).
    """
    try:
        flow = app.get_workflow(run.workflow_name).flow
    except UnknownWorkflow:
        return None
    if flow.concurrency is None:
        return None
    data = data if data is not None else run.input
    if data is None:
        try:
            data = world.runs.get(run.run_id, resolve_data=ResolveData.ALL).input
        except NotFound:
            return None
    key = flow.key(app.serializer.loads, data or b"", where=run.run_id)
    return run_scope(run.workflow_name, key)


def release_run_slot(
    world: World, app: Workflows, run: Run | None, run_id: str | None = None, *, data: bytes | None = None
) -> None:
    """Give ``run``'s slot back (and its place in line) and publish the wakes of the runs it frees.

    ``run_id``: the run to read if ``run`` is None (a path that ended it without reading it).
    """
    try:
        if run is None and run_id is not None:
            run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
        if run is None:
            return
        scope = run_slot_scope(world, app, run, data)
        if scope is not None:
            release_scope(world, scope, run.run_id)
    except Exception:
        telemetry.LOG.warning(
            "could not release a run's concurrency slot; the next arrival's audit frees it",
            exc_info=True,
            extra={"run_id": run.run_id if run is not None else run_id},
        )


def release_scope(world: World, scope: str, run_id: str) -> None:
    """Release ``run_id``'s slot of ``scope`` and publish the woken runs' messages.

    Raises:
        WorldAwsError: the release or a publish failed.
    """
    for body in world.admission.release(scope, holder=run_id):
        world.queue.publish(QueueName.WORKFLOW, body)
