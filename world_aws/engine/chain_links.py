"""Following continue-as-new links: the id of the run that continues a run, and the chain's last run.

The authoring side (``continue_as_new``, the ``ContinuedAsNew`` link) is in
``workflow/chain.py``; this is the part that derives ids and reads the World.
"""

from __future__ import annotations

from world_aws.contract.records import ResolveData, Run, RunStatus
from world_aws.contract.world import World
from world_aws.engine import ids
from world_aws.errors import NotFound
from world_aws.workflow.chain import CONTINUED_FROM

# Links of a chain ``last_of_chain`` follows at most (a run's ``$continued_from`` names one).
MAX_CHAIN_FOLLOWED = 10_000


def next_run_id(run_id: str) -> str:
    """The id of the run that continues ``run_id`` (deterministic: a redo starts it once)."""
    return ids.derived_run_id(f"{run_id}:continue")


def last_of_chain(world: World, run_id: str) -> Run | None:
    """The last run of the chain ``run_id`` begins: itself if it did not continue as new.

    None: a run of it is missing, or the chain is longer than ``MAX_CHAIN_FOLLOWED``.
    Each link is one read without payloads: a completed run continued as new iff the
    run of its derived id (``next_run_id``) names it as the run it continues.
    """
    try:
        run = world.runs.get(run_id, resolve_data=ResolveData.NONE)
    except NotFound:
        return None
    for _ in range(MAX_CHAIN_FOLLOWED):
        if run.status is not RunStatus.COMPLETED:
            return run
        try:
            following = world.runs.get(next_run_id(run.run_id), resolve_data=ResolveData.NONE)
        except NotFound:
            return run
        if following.attributes.get(CONTINUED_FROM) != run.run_id:
            return run
        run = following
    return None
