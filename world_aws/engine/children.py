"""Child workflows, the replay side: what awaiting a workflow inside a workflow records.

Awaiting an ``@app.workflow`` function inside a workflow is a *child call*. The n-th
child call of a run gets the correlation id ``child_<run ulid>_<n>`` and a child run
id derived from the parent's run id and n, so every replay of the same prefix names
the same child and a replay never starts a second one (the start is an idempotent
create, contract §6.1).

In the parent's log a child call is a hook: ``hook_created`` under the call's id
with the reserved token ``wchild_<child run id>`` records that the child was started
(the suspension pass writes it only after the child's start succeeded, and the
child's first delivery ensures it too, so it exists before the child can end), and
the ``hook_received`` that the child's end writes (``client/lineage.py``) carries
its outcome. The outcome is resolved at that event's position, like a step's, so
``asyncio.gather`` and ``asyncio.wait`` over children replay the same way every time.

A child's id is in a namespace no caller's idempotency key reaches (``engine/ids.py``),
and a run under it that this parent did not start (its ``$parent_run_id`` and
``$parent_call_id`` name another call) is never waited for: the call fails with
``ChildRunIdTaken`` (:func:`taken_outcome`), which the workflow sees at its ``await``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from world_aws.contract.records import Run
from world_aws.engine import ids
from world_aws.errors import BadInput, RunCancelledError, WorkflowFailedError
from world_aws.serde.codec import Serializer, decode_error
from world_aws.serde.errors import ErrorInfo, RecordedError, encode_error_info

# Reserved hook-token prefix of child calls: ``create_hook`` and ``resume_hook`` refuse it,
# so no caller can forge a child's outcome through the hook API.
CHILD_TOKEN_PREFIX = "wchild_"
# Run attributes (contract §2.1 reserves the ``$`` prefix) that link a child to its parent.
PARENT_RUN_ID = "$parent_run_id"
ROOT_RUN_ID = "$root_run_id"
PARENT_CALL_ID = "$parent_call_id"

# The error code (and type) of a child call whose run id is held by a run it did not start.
CHILD_RUN_ID_TAKEN = "ChildRunIdTaken"

COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"


def child_run_id(parent_run_id: str, call_id: str) -> str:
    """The run id of the child started by ``call_id`` of ``parent_run_id`` (deterministic)."""
    return ids.derived_run_id(f"{parent_run_id}:{call_id}")


def child_token(run_id: str) -> str:
    """The reserved token of the parent's hook that waits for child ``run_id``."""
    return f"{CHILD_TOKEN_PREFIX}{run_id}"


def child_of_token(token: str) -> str | None:
    """The child run id a reserved token names, or None for any other token."""
    return token[len(CHILD_TOKEN_PREFIX) :] if token.startswith(CHILD_TOKEN_PREFIX) else None


def refuse_reserved_token(token: str) -> None:
    """Raise BadInput for a token in the reserved child namespace (user hooks and resumes)."""
    if token.startswith(CHILD_TOKEN_PREFIX):
        raise BadInput(f"hook tokens starting with {CHILD_TOKEN_PREFIX!r} are reserved for child workflows")


@dataclass(frozen=True, slots=True)
class ChildRequest:
    """A child call the parent's suspension pass must start (or look at, on a reconcile wake)."""

    call_id: str
    run_id: str
    workflow_name: str
    input: bytes

    @property
    def token(self) -> str:
        return child_token(self.run_id)


@dataclass(slots=True)
class ChildCall:
    """One child call of a replay: its request and the future the workflow awaits."""

    request: ChildRequest
    future: asyncio.Future[Any]


def is_child_of(run: Run, parent_run_id: str, call_id: str) -> bool:
    """Whether ``run`` is the child ``call_id`` of ``parent_run_id`` started (the ``$`` links only
    the runtime writes: callers may not set them)."""
    return (
        run.attributes.get(PARENT_RUN_ID) == parent_run_id and run.attributes.get(PARENT_CALL_ID) == call_id
    )


def taken_outcome(serializer: Serializer, request: ChildRequest, holder: Run) -> bytes:
    """The failed outcome of a child call whose run id ``holder`` holds without being its child."""
    message = (
        f"child run id {request.run_id} of call {request.call_id} (workflow {request.workflow_name!r}) "
        f"is held by a run this parent did not start (workflow {holder.workflow_name!r}); "
        "the call fails instead of waiting for that run"
    )
    error = encode_error_info(ErrorInfo(type=CHILD_RUN_ID_TAKEN, message=message))
    return encode_outcome(serializer, FAILED, error=error, error_code=CHILD_RUN_ID_TAKEN)


def encode_outcome(
    serializer: Serializer,
    status: str,
    *,
    output: bytes | None = None,
    error: bytes | None = None,
    error_code: str | None = None,
) -> bytes:
    """The ``hook_received`` payload a child's end writes into its parent's log."""
    return serializer.dumps(
        {"status": status, "output": output, "error": error, "error_code": error_code},
        context="a child workflow's outcome",
    )


def settle(call: ChildCall, serializer: Serializer, payload: Any) -> None:
    """Resolve ``call`` from the outcome its ``hook_received`` carried."""
    if call.future.done():
        return
    run_id = call.request.run_id
    outcome = payload if isinstance(payload, dict) else {}
    status = outcome.get("status")
    if status == COMPLETED:
        try:
            call.future.set_result(serializer.loads(outcome.get("output") or b""))
        except BadInput as err:
            call.future.set_exception(err)
        return
    if status == CANCELLED:
        call.future.set_exception(RunCancelledError(run_id))
        return
    info = decode_error(outcome.get("error") or b"")
    failure = WorkflowFailedError(run_id, info.type, info.message, outcome.get("error_code"))
    failure.__cause__ = RecordedError(info)
    call.future.set_exception(failure)
