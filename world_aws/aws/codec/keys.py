"""Key construction for the single DynamoDB table (contract §7.2): one place that knows the layout.

Table: partition key ``pk`` (S), sort key ``sk`` (S); GSI ``runs_by_created``
(``gsi1pk``, ``gsi1sk``, projecting ``workflow_name``) for listing runs newest first; sparse GSI ``live``
(``live_pk``, ``live_sk``, keys only) holding the non-terminal runs the reconciler
has marked, by reconcile mark; TTL attribute ``expires_at`` (N, epoch seconds).

======================  ==========================  ================================
item                    pk                          sk
======================  ==========================  ================================
run                     ``run#<run_id>``            ``run``
event at position p     ``run#<run_id>``            ``evt#<p zero-padded to 12>``
step                    ``run#<run_id>``            ``step#<step_id>``
step without outcome    ``run#<run_id>``            ``pend#<step_id>``
hook                    ``run#<run_id>``            ``hook#<hook_id>``
wait                    ``run#<run_id>``            ``wait#<wait_id>``
hook-resume dedup       ``run#<run_id>``            ``resume#<resume_id>``
hook token              ``token#<token>``           ``token``
queue idempotency key   ``dedup#<key>``             ``dedup``
schedule state          ``schedule#<name>``         ``schedule``
flow-control slots      ``flow#<scope>``            ``slots``
flow-control rate       ``flow#<scope>``            ``rate``
reconciler sweep cursor ``reconciler``              ``sweep``
stream chunk at p       ``run#<run_id>``            ``strm#<name>#<p zero-padded>``
inline owner's lease    ``run#<run_id>``            ``lease#<owner tag>``
======================  ==========================  ================================

A ``pend#`` marker is put in the transaction that creates its step and deleted
in the one that records the step's outcome (completed or failed), so one
consistent Query of at most two markers answers "does any other step of this
run still run?" (the last completer, contract §5.1 step 6) whatever the fan-out.

Positions are zero-padded so that the sort key order is the position order:
12 digits hold a trillion events per run.

A run's input is not in its run item: the item every event rewrites (``seq``)
stays small whatever the input. It is kept once, in the ``run_created`` event
at position 1 (``RUN_CREATED_POSITION``), which is written in the same
transaction as the run item and never changes; ``runs.get`` reads both items
in one ``BatchGetItem``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

PK: Final = "pk"
SK: Final = "sk"
# Runs newest first (keys gsi1pk, gsi1sk; projects workflow_name only). Named anew when
# it stopped projecting status: a GSI's projection cannot change in place.
RUNS_INDEX: Final = "runs_by_created"
GSI1_PK: Final = "gsi1pk"
GSI1_SK: Final = "gsi1sk"
TTL_ATTRIBUTE: Final = "expires_at"
LIVE: Final = "live"
LIVE_PK: Final = "live_pk"
LIVE_SK: Final = "live_sk"
# Sparse, keys only: the runs not yet ended by the deployment they are pinned to
# (``deployment_index``); a held run is under HELD_DEPLOYMENT instead.
DEPLOYMENT_INDEX: Final = "runs_by_deployment"
DEP_PK: Final = "dep_pk"
HELD_DEPLOYMENT: Final = "#held"

# Sparse, keys only: ended runs with a retention by when they expire (``erasure``). A run
# created with a retention carries XP_PK and RET_US (its retention, µs) from its creation;
# its end sets XP_US = its end + RET_US, which puts it in the index.
EXPIRING_INDEX: Final = "runs_expiring"
XP_PK: Final = "xp_pk"
XP_US: Final = "xp_us"
RET_US: Final = "ret_us"
EXPIRING_GSI_PK: Final = "expiring"
# An erased run's item, stripped to its status (a tombstone, ``erasure``).
ERASED_AT: Final = "erased_at"

RUN_SK: Final = "run"
BLOB_PREFIX: Final = "blob#"
EVENT_PREFIX: Final = "evt#"
STEP_PREFIX: Final = "step#"
PENDING_PREFIX: Final = "pend#"
HOOK_PREFIX: Final = "hook#"
WAIT_PREFIX: Final = "wait#"
RESUME_PREFIX: Final = "resume#"
STREAM_PREFIX: Final = "strm#"
LEASE_PREFIX: Final = "lease#"
TOKEN_SK: Final = "token"
DEDUP_SK: Final = "dedup"
SCHEDULE_SK: Final = "schedule"
# The run item's attribute ``own#<step id>`` = the create position of an owned step whose
# item is not written yet (``step_events``: the lazily written owned step item).
OWN_PREFIX: Final = "own#"
# The run item's attribute: the create position of its first owned step appended without
# an item. From there on the log may hold steps that never get an item (their owner's
# outcome writes none, ``step_events``): readers and creates look for them in the log.
LOGGED_FROM: Final = "logged_from"
# The run item's attribute, set by the reservation of every ``hook_created`` (``true``): the
# run may hold hook items. A run's end queries its hooks to release them only when its
# run item has it (``RunEvents.release_hooks``): a run that never made a hook reads none.
HOOKED: Final = "hooked"

# Every run item carries this GSI partition key, so RUNS_INDEX lists all runs by gsi1sk.
RUNS_GSI_PK: Final = "runs"
# A run item marked by the reconciler carries this live-index partition key; the
# transition that ends the run removes it (and live_sk), so the index holds only runs still going.
LIVE_GSI_PK: Final = "live"
POSITION_DIGITS: Final = 12
MAX_POSITION: Final = 10**POSITION_DIGITS - 1
# The run_created event, whose creation data holds the run's input (the run item does not).
RUN_CREATED_POSITION: Final = 1

Key = dict[str, str]


def run_pk(run_id: str) -> str:
    return f"run#{run_id}"


def run_key(run_id: str) -> Key:
    return {PK: run_pk(run_id), SK: RUN_SK}


def run_id_of(item: Mapping[str, object]) -> str:
    """The run id of an item under a run's partition (``run#<run_id>``): the run item keeps no copy."""
    return str(item[PK]).removeprefix("run#")


def event_sk(position: int) -> str:
    return f"{EVENT_PREFIX}{position:0{POSITION_DIGITS}d}"


def event_key(run_id: str, position: int) -> Key:
    return {PK: run_pk(run_id), SK: event_sk(position)}


def run_input_key(run_id: str) -> Key:
    """The item that holds the run's input: its ``run_created`` event."""
    return event_key(run_id, RUN_CREATED_POSITION)


def step_key(run_id: str, step_id: str) -> Key:
    return {PK: run_pk(run_id), SK: f"{STEP_PREFIX}{step_id}"}


def own_attribute(step_id: str) -> str:
    """The run item's entry for an owned step created without its item (its create position)."""
    return f"{OWN_PREFIX}{step_id}"


def pending_key(run_id: str, step_id: str) -> Key:
    """The marker of a step that has no outcome yet."""
    return {PK: run_pk(run_id), SK: f"{PENDING_PREFIX}{step_id}"}


def lease_key(run_id: str, owner: str) -> Key:
    """An inline owner's lease renewal on the run's steps (``steps.renew_lease``)."""
    return {PK: run_pk(run_id), SK: f"{LEASE_PREFIX}{owner}"}


def hook_key(run_id: str, hook_id: str) -> Key:
    return {PK: run_pk(run_id), SK: f"{HOOK_PREFIX}{hook_id}"}


def wait_key(run_id: str, wait_id: str) -> Key:
    return {PK: run_pk(run_id), SK: f"{WAIT_PREFIX}{wait_id}"}


def resume_key(run_id: str, resume_id: str) -> Key:
    return {PK: run_pk(run_id), SK: f"{RESUME_PREFIX}{resume_id}"}


def token_key(token: str) -> Key:
    return {PK: f"token#{token}", SK: TOKEN_SK}


def dedup_key(key: str) -> Key:
    """The idempotency item of a queue publish (contract §4.4); written by the SQS queue."""
    return {PK: f"dedup#{key}", SK: DEDUP_SK}


def schedule_key(name: str) -> Key:
    """The scheduler's record of one schedule (``world_aws.aws.read.schedule_store``)."""
    return {PK: f"schedule#{name}", SK: SCHEDULE_SK}


def flow_key(scope: str, kind: str) -> Key:
    """A flow-control record of ``scope``: its ``slots`` or its ``rate`` window (``aws/write/admission``)."""
    return {PK: f"flow#{scope}", SK: kind}


# The reconciler's sweep cursor over RUNS_INDEX (``live_index.sweep_created``).
SWEEP_KEY: Final[Key] = {PK: "reconciler", SK: "sweep"}


def live_sk(mark_iso: str, run_id: str) -> str:
    """Sorts live runs by reconcile mark, then id (ISO-8601 UTC with microseconds sorts as text)."""
    return f"{mark_iso}#{run_id}"


def runs_gsi_sk(created_at_iso: str, run_id: str) -> str:
    """Sorts runs by creation time, then id; listed newest first (ScanIndexForward=False)."""
    return f"{created_at_iso}#{run_id}"


def stream_prefix(name: str) -> str:
    """The sort-key prefix of one stream's chunks (names hold no ``#``: contract/streams)."""
    return f"{STREAM_PREFIX}{name}#"


def stream_key(run_id: str, name: str, position: int) -> Key:
    return {PK: run_pk(run_id), SK: f"{stream_prefix(name)}{position:0{POSITION_DIGITS}d}"}


def blob_referrer_key(digest: str, run_id: str) -> Key:
    """A run's reference to a blob, under the blob (``erasure``: is any other run left?)."""
    return {PK: f"{BLOB_PREFIX}{digest}", SK: run_pk(run_id)}


def run_blob_key(run_id: str, digest: str) -> Key:
    """The same reference under the run (an erasure finds the run's blobs in its partition)."""
    return {PK: run_pk(run_id), SK: f"{BLOB_PREFIX}{digest}"}
