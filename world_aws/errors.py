"""The one error hierarchy of world-aws, grouped by what the caller must do.

Every rejection a World makes is one of the contract §3 kinds below, with a stable
``kind`` and HTTP-like ``code``. The runtime reacts to the class (or ``kind``),
never to a message string. Control-flow signals that user code must not catch
live in the runtime and derive from ``BaseException``; everything here is an
ordinary ``Exception``.

This module imports nothing but the standard library.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorKind(StrEnum):
    """Stable names of the error kinds (contract §3)."""

    NOT_FOUND = "NotFound"
    CONFLICT = "Conflict"
    RUN_EXPIRED = "RunExpired"
    TOO_EARLY = "TooEarly"
    THROTTLED = "Throttled"
    TRANSIENT = "Transient"
    BAD_INPUT = "BadInput"
    NON_DETERMINISM = "NonDeterminism"
    USER_FAILURE = "UserFailure"
    MISCONFIGURED = "Misconfigured"


class WorldAwsError(Exception):
    """Base of every error raised by world-aws."""

    kind: ErrorKind = ErrorKind.TRANSIENT
    code: int | None = None


# --- The World refused the operation: the answer is final for this request. ---


class WorldRejection(WorldAwsError):
    """A World refused an event or lookup for a reason that retrying will not change."""


class NotFound(WorldRejection):
    """The run, step or hook the operation names does not exist (404)."""

    kind = ErrorKind.NOT_FOUND
    code = 404


class RunErased(NotFound):
    """The run was erased (contract §3.4): its tombstone refuses every write, for good (404)."""


class Conflict(WorldRejection):
    """Already done: a duplicate create, or a transition out of a terminal state (409)."""

    kind = ErrorKind.CONFLICT
    code = 409


class RunExpired(WorldRejection):
    """Gone: the run is terminal, so this operation may not happen (410). See contract §3.1."""

    kind = ErrorKind.RUN_EXPIRED
    code = 410


# --- Retry later: the same request may succeed after a delay. ---


class RetryLater(WorldAwsError):
    """The operation may succeed if retried after ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TooEarly(RetryLater):
    """``step_started`` while the step's ``retry_after`` is in the future (425).

    ``retry_after`` carries the seconds left.
    """

    kind = ErrorKind.TOO_EARLY
    code = 425


class Throttled(RetryLater):
    """The backend is throttling (429); ``retry_after`` says when to try again."""

    kind = ErrorKind.THROTTLED
    code = 429


class Transient(RetryLater):
    """Any other backend or network failure: safe to retry."""

    kind = ErrorKind.TRANSIENT


# --- The deployment is wrong: fix the configuration, then redeliver. ---


class Misconfigured(WorldAwsError):
    """A table, index, queue or bucket is missing, or access to it is denied (503).

    Not the absence of a run, step or hook (never a ``NotFound``, which the
    runtime treats as domain state), and not something a short wait cures (never
    a ``RetryLater``, which some paths tolerate): the deployment itself is wrong.
    A delivery that meets it is redelivered, never acked, and alarmed on; the API
    answers 503 with the reason.

    Attributes:
        resource: what was reached, e.g. ``table wf-prod`` or ``queue https://...``.
        operation: the call that failed, e.g. ``DynamoDB GetItem``.
    """

    kind = ErrorKind.MISCONFIGURED
    code = 503

    def __init__(self, message: str, *, resource: str = "", operation: str = "") -> None:
        super().__init__(message)
        self.resource = resource
        self.operation = operation


class DeploymentGone(WorldAwsError):
    """The deployment a run is pinned to cannot be reached: retired, or unknown to this process.

    The delivery is then handled by the deployment that received it (README "Deploying
    changes"); a run whose replay diverges there is held, not failed.
    """

    kind = ErrorKind.NOT_FOUND
    code = 404


class DeploymentInUse(Conflict):
    """A deployment cannot be retired while runs are pinned to it (409)."""


# --- The caller's input is wrong. ---


class BadInput(WorldAwsError, ValueError):
    """Input that can never be accepted: a malformed message, argument or payload."""

    kind = ErrorKind.BAD_INPUT
    code = 400


class SerializationError(BadInput):
    """A value cannot be serialized (or deserialized); the message names the type."""


class PayloadEncrypted(SerializationError):
    """A payload is sealed with its run's data key and this process cannot open it (no ``kms:Decrypt``).

    The API, CLI and UI show ``<encrypted>`` in its place (README "Security").
    """


class UnknownWorkflow(BadInput):
    """No workflow (or step) of that name is registered."""


# --- The workflow code itself. ---


class NonDeterminismError(WorldAwsError):
    """The workflow code no longer matches the run's event log."""

    kind = ErrorKind.NON_DETERMINISM


class UnawaitedCallError(WorldAwsError):
    """A workflow returned while a step or child call it made was never awaited (``UNAWAITED_CALL``)."""

    kind = ErrorKind.USER_FAILURE


class FatalError(WorldAwsError):
    """Raised by a step to fail at once, without retries."""

    kind = ErrorKind.USER_FAILURE


class RetryableError(WorldAwsError):
    """Raised by a step to be retried no earlier than ``retry_after`` seconds from now."""

    kind = ErrorKind.USER_FAILURE

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StepFailedError(WorldAwsError):
    """A step failed for good; raised inside the workflow at the step's await.

    Attributes keep the original failure: ``step_name``, ``error_type`` (the
    exception class name) and ``error_message``.
    """

    kind = ErrorKind.USER_FAILURE

    def __init__(self, step_name: str, error_type: str, error_message: str) -> None:
        super().__init__(f"step {step_name!r} failed: {error_type}: {error_message}")
        self.step_name = step_name
        self.error_type = error_type
        self.error_message = error_message


class WorkflowFailedError(WorldAwsError):
    """The run ended as failed; raised by ``RunHandle.result()``."""

    kind = ErrorKind.USER_FAILURE

    def __init__(self, run_id: str, error_type: str, error_message: str, error_code: str | None) -> None:
        super().__init__(f"run {run_id} failed: {error_type}: {error_message}")
        self.run_id = run_id
        self.error_type = error_type
        self.error_message = error_message
        self.error_code = error_code


class HookConflictError(WorldAwsError):
    """The hook's token is held by another live hook; raised at the hook's await."""

    kind = ErrorKind.CONFLICT
    code = 409

    def __init__(self, token: str, conflicting_run_id: str | None) -> None:
        # The message never names the holder: a run must not learn another run's id from a token.
        super().__init__(f"hook token {token!r} is already held by another live hook")
        self.token = token
        self.conflicting_run_id = conflicting_run_id


class HookDisposedError(WorldAwsError):
    """The hook was disposed (``hook.dispose()``) and holds no more payloads; raised at its await."""

    kind = ErrorKind.NOT_FOUND
    code = 404

    def __init__(self, token: str) -> None:
        super().__init__(f"hook token {token!r} was disposed: it receives no more payloads")
        self.token = token


class RunCancelledError(WorldAwsError):
    """The run was cancelled; raised by ``RunHandle.result()``."""

    kind = ErrorKind.USER_FAILURE

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id} was cancelled")
        self.run_id = run_id


class ResultTimeout(WorldAwsError, TimeoutError):
    """``RunHandle.result(timeout=...)`` ran out before the run ended."""

    kind = ErrorKind.TRANSIENT


class StepTimeoutError(WorldAwsError):
    """An attempt of a step ran past its timeout, or past the time left in its invocation.

    A failure of that attempt like any other: the step's retry policy applies, and the
    last one surfaces in the workflow as ``StepFailedError`` with this as its cause
    (``worker/step_timeout.py``). ``handed_on``: the bound was the invocation's end,
    not the step's own timeout.
    """

    kind = ErrorKind.USER_FAILURE

    def __init__(self, message: str, *, handed_on: bool = False) -> None:
        super().__init__(message)
        self.handed_on = handed_on
