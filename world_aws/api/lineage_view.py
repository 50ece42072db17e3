"""How the API shows a run's links: its parent, root and children, and its continue-as-new chain."""

from __future__ import annotations

from world_aws.api.models import RunLinks
from world_aws.client.fork_plan import reused_child
from world_aws.client.forks import forked_from
from world_aws.contract.records import Event, EventType, HookCreatedData, Run
from world_aws.engine.children import PARENT_RUN_ID, child_of_token
from world_aws.errors import BadInput
from world_aws.serde.codec import Serializer
from world_aws.workflow.chain import CONTINUED_FROM, ContinuedAsNew


def run_links(run: Run, events: list[Event], serializer: Serializer) -> RunLinks | None:
    """The links of ``run`` (read with payloads) from its attributes, output and log; None if it has none.

    A fork's child calls copied from its original (before its ``run_started``) name the
    original's child, whose outcome the fork reuses (``client/fork_plan.py``).
    """
    source = forked_from(run)
    started = next((e.position for e in events if e.type is EventType.RUN_STARTED), None)
    kids = [
        reused_child(run.run_id, source, e.correlation_id or "")
        if source is not None and (started is None or e.position < started)
        else kid
        for e in events
        if isinstance(e.data, HookCreatedData) and (kid := child_of_token(e.data.token)) is not None
    ]
    links = RunLinks(
        root_run_id=run.root_run_id,
        parent_run_id=run.attributes.get(PARENT_RUN_ID),
        children=kids,
        continued_from=run.attributes.get(CONTINUED_FROM),
        continued_as=_continued_as(run, serializer),
    )
    if links.model_dump(exclude_defaults=True).keys() == {"root_run_id"} and run.root_run_id == run.run_id:
        return None
    return links


def _continued_as(run: Run, serializer: Serializer) -> str | None:
    if run.output is None:
        return None
    try:
        value = serializer.loads(run.output)
    except BadInput:
        return None
    return value.run_id if isinstance(value, ContinuedAsNew) else None
