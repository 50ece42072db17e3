"""``connect(api_url)``: start and follow runs on a deployed stack from a Python service, over its HTTP API.

A service that is not the app itself (a web backend, a script, another team's Lambda)
reaches the stack's HTTP API (the template's output ``ApiUrl``, IAM-authorized), its
requests SigV4-signed from the default AWS credential chain: the same client the
operator CLI uses (:class:`world_aws.cli.client.ApiClient`), so signing lives in one place
(``world_aws.aws.sigv4``). The methods mirror ``Runtime``'s: ``start`` gives a handle,
``get`` reads a run, ``result`` waits for its value, ``resume`` sends a hook its payload and
``cancel`` cancels a run. Values travel as JSON (the API's encoding of the app's values).

Errors are the package's own, grouped by what the caller does (``world_aws.errors``):
``BadInput`` (400), ``NotFound`` (404), ``Conflict`` (409), ``RetryLater`` (429, 5xx, or
no answer), ``Misconfigured`` (401/403: credentials or the URL); a run that ended badly
raises ``WorkflowFailedError`` or ``RunCancelledError`` from ``result``.

Every attempt of a step, and every replay of the workflow, runs inside one invocation of
the stack's functions, so one attempt is bounded by their 150 s timeout (template.yaml
``Timeout: 150``, contract §10); a run itself may last as long as it likes (sleeps, hooks,
retries).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from world_aws.cli.client import ApiClient, ApiError, Unreachable, api_url
from world_aws.errors import (
    BadInput,
    Conflict,
    Misconfigured,
    NotFound,
    ResultTimeout,
    RetryLater,
    RunCancelledError,
    WorkflowFailedError,
)

DEFAULT_TIMEOUT_SECONDS = 30.0
# result() reads the run this often while it waits (one GET each; no push from the API).
POLL_SECONDS = 0.2
_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class RemoteRun:
    """A handle on a run of a deployed stack, as ``Runtime.start`` gives one locally.

    Attributes:
        run_id: the run's id.
    """

    def __init__(self, client: ServiceClient, run_id: str) -> None:
        self._client = client
        self.run_id = run_id

    def __repr__(self) -> str:
        return f"RemoteRun({self.run_id!r})"

    def get(self) -> dict[str, Any]:
        """The run as the API shows it (``GET /runs/{id}``): status, input, result or error, times."""
        return self._client.get(self.run_id)

    def status(self) -> str:
        """The run's status: ``pending``, ``running``, ``completed``, ``failed`` or ``cancelled``."""
        return str(self.get()["status"])

    def result(self, timeout: float | None = None) -> Any:
        """The workflow's return value once the run ends; see :meth:`ServiceClient.result`."""
        return self._client.result(self.run_id, timeout=timeout)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the run (and its children); False if it had ended already."""
        return self._client.cancel(self.run_id, reason)


class ServiceClient:
    """The runs of one deployed stack, through its HTTP API. Build it with :func:`connect`."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    @property
    def url(self) -> str:
        return self.api.base_url

    def start(
        self, workflow: str, *args: Any, idempotency_key: str | None = None, **kwargs: Any
    ) -> RemoteRun:
        """Start a run of ``workflow`` with JSON-encodable arguments; the same key gives the same run.

        Raises:
            BadInput: unknown workflow, or arguments the workflow does not take.
        """
        with _errors():
            started = self.api.start(workflow, list(args), kwargs, idempotency_key)
        return RemoteRun(self, str(started["run_id"]))

    def get(self, run_id: str) -> dict[str, Any]:
        """The run as the API shows it. Raises NotFound."""
        with _errors():
            run = self.api.get_run(run_id)
        if not isinstance(run, dict):
            raise RetryLater(f"{self.url} answered a run that is not an object")
        return run

    def run(self, run_id: str) -> RemoteRun:
        """A handle on an existing run. Raises NotFound."""
        self.get(run_id)
        return RemoteRun(self, run_id)

    def result(self, run_id: str, *, timeout: float | None = None) -> Any:
        """Wait for the run to end (polling); its value (of the chain's last run, if it continued as new).

        Raises:
            WorkflowFailedError: the run failed (type, message and error code as recorded).
            RunCancelledError: the run was cancelled.
            ResultTimeout: ``timeout`` seconds passed first (the run goes on).
            NotFound: no such run.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            run = self.get(run_id)
            status = run["status"]
            continued_as = (run.get("links") or {}).get("continued_as")
            if status == "completed" and continued_as:  # follow the chain to its last run
                run_id = str(continued_as)
                continue
            if status in _TERMINAL:
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise ResultTimeout(f"run {run_id} is still {status} after {timeout}s")
            time.sleep(POLL_SECONDS)
        if status == "completed":
            return run.get("result")
        if status == "cancelled":
            raise RunCancelledError(run_id)
        error = run.get("error") or {}
        raise WorkflowFailedError(
            run_id, str(error.get("type", "Error")), str(error.get("message", "")), error.get("code")
        )

    def resume(self, token: str, payload: Any, *, resume_id: str | None = None) -> str:
        """Send ``payload`` to the hook holding ``token``; its resume id (the same id resumes once).

        Raises:
            NotFound: no live hook holds the token.
            Conflict: the hook was resumed already with another id.
        """
        with _errors():
            answer = self.api.resume(token, payload, resume_id)
        return str(answer["resume_id"])

    def cancel(self, run_id: str, reason: str | None = None) -> bool:
        """Cancel the run and its children; False if it had ended already. Raises NotFound."""
        with _errors():
            before = self.api.get_run(run_id)["status"]
            if before in _TERMINAL:
                return False
            answer = self.api.cancel(run_id, reason)
        return bool(answer["status"] == "cancelled")


def connect(
    api: str | None = None, *, sign: bool | None = None, timeout: float = DEFAULT_TIMEOUT_SECONDS
) -> ServiceClient:
    """A client for the stack whose HTTP API is at ``api`` (default: ``$WORLD_AWS_API``).

    Args:
        api: the API's base URL, e.g. the stack's ``ApiUrl`` output, or a ``world-aws dev`` URL.
        sign: SigV4-sign requests from the default AWS credentials; None (the default) signs
            for API Gateway hosts (``*.execute-api.*.amazonaws.com``) only.
        timeout: seconds to wait for each answer.

    Raises:
        BadInput: the URL is not an http(s) URL.
    """
    return ServiceClient(ApiClient(api_url(api), sign=sign, timeout=timeout))


@contextmanager
def _errors() -> Iterator[None]:
    """The API's failures as the package's errors, by what the caller must do."""
    try:
        yield
    except Unreachable as exc:
        raise RetryLater(str(exc)) from None
    except ApiError as exc:
        message = str(exc)
        if exc.status == 404:
            raise NotFound(message) from None
        if exc.status == 409:
            raise Conflict(message) from None
        if exc.status in (400, 413, 422):
            raise BadInput(message) from None
        if exc.status in (401, 403):
            raise Misconfigured(message) from None
        raise RetryLater(message) from None
