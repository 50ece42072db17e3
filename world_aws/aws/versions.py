"""Deployments on AWS: published versions of the workflow function, and the hand-over between them.

Each ``sam deploy`` that changes the code publishes a new version of the workflow
function (``AutoPublishAlias: live`` in ``template.yaml``); its number is the
deployment id of the runs it starts (``AwsConfig``). Every function consumes through
the newest version, so a delivery for a run pinned to an older one is handed to it:
:class:`LambdaHandover` invokes ``<function>:<version>`` synchronously
(``RequestResponse``) with the delivery (:func:`handover_event`), and the old
version answers with its outcome (:func:`handover_answer`), which the receiving
consumer gives SQS as its own. A version that no longer exists is ``DeploymentGone``:
the delivery is handled on the newest code, and a run that diverges there is held.

The invoke sits behind :class:`Invoker` (one method), so the routing is tested
without Docker: moto holds the versions (``publish_version``,
``list_versions_by_function``, ``delete_function``), a test invoker runs the old
app's handler in process.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from world_aws.aws.config import AwsConfig
from world_aws.aws.errors import mapped_errors
from world_aws.contract.clock import epoch_ms, from_epoch_ms
from world_aws.contract.world import Ack, Delivery, Deployment, HandlerResult, QueueName, Redeliver, RunStore
from world_aws.errors import BadInput, DeploymentGone, DeploymentInUse, NotFound, Transient

# A boto3 Lambda client (its stubs are not a dependency).
LambdaClient = Any

# The key of a hand-over event (a Lambda event of world-aws's own, not SQS's).
HANDOVER_KEY = "world_aws_handover"


class Invoker(Protocol):
    """Invokes one version of a function synchronously with a JSON event; its JSON answer."""

    def invoke(self, function: str, version: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
        """The function's answer.

        Raises:
            DeploymentGone: no such version.
            Transient: the invoke failed, or the function raised (the delivery is redelivered).
        """
        ...


# A hand-over waits for the old version's whole invocation (the functions' timeout is 150 s):
# botocore's default 60 s read timeout would cut it short, and its retry would invoke the old
# version a second time with the same delivery. One attempt; a failure is a redelivery.
_INVOKE_CONFIG = Config(read_timeout=900, connect_timeout=10, retries={"total_max_attempts": 1})


def lambda_client(config: AwsConfig) -> LambdaClient:
    """A Lambda client for ``config``'s region and endpoint, for synchronous hand-overs."""
    session = boto3.session.Session(region_name=config.region)
    return session.client("lambda", endpoint_url=config.endpoint_url, config=_INVOKE_CONFIG)


class LambdaInvoker:
    """:class:`Invoker` over the Lambda API: ``Invoke`` of ``function:version``, ``RequestResponse``."""

    def __init__(self, client: LambdaClient) -> None:
        self._client = client

    def invoke(self, function: str, version: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
        qualified = f"{function}:{version}"
        with mapped_errors("Lambda Invoke", resource=f"function {qualified}"):
            try:
                response = self._client.invoke(
                    FunctionName=function,
                    Qualifier=version,
                    InvocationType="RequestResponse",
                    Payload=json.dumps(event).encode(),
                )
            except ClientError as exc:
                # A missing table or queue is a misconfiguration (aws/errors.py); a missing
                # version is a deployment that was retired: the delivery is handled here.
                if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                    raise DeploymentGone(f"version {version} of {function} is gone") from exc
                raise
        body = response["Payload"].read()
        if response.get("FunctionError"):
            raise Transient(f"{qualified} failed handling a handed-over delivery: {body[:500]!r}")
        answer = json.loads(body or b"{}")
        if not isinstance(answer, dict):
            raise Transient(f"{qualified} answered a hand-over with {type(answer).__name__}, not an object")
        return answer


def handover_event(delivery: Delivery) -> dict[str, Any]:
    """The event a hand-over invokes the pinned version with: the delivery, body in base64.

    With the receiver's deadline (epoch ms): the old version hands inline work on before
    it, since the receiver's invocation, which waits for the answer, ends then.
    """
    raw: dict[str, Any] = {
        "queue": delivery.queue.value,
        "message_id": delivery.message_id,
        "attempt": delivery.attempt,
        "body": base64.b64encode(delivery.body).decode(),
    }
    if delivery.deadline is not None:
        raw["deadline_ms"] = epoch_ms(delivery.deadline)
    return {HANDOVER_KEY: raw}


def handed_over(event: Mapping[str, Any], deadline: datetime | None = None) -> Delivery | None:
    """The delivery of a hand-over event (None for any other event), due by the earlier deadline.

    ``deadline``: when this invocation will be stopped; the event may name an earlier one.

    Raises:
        BadInput: a hand-over event that is malformed.
    """
    raw = event.get(HANDOVER_KEY)
    if raw is None:
        return None
    try:
        theirs = raw.get("deadline_ms")
        deadlines = [d for d in (deadline, from_epoch_ms(int(theirs)) if theirs is not None else None) if d]
        return Delivery(
            queue=QueueName(raw["queue"]),
            message_id=str(raw["message_id"]),
            attempt=int(raw["attempt"]),
            body=base64.b64decode(raw["body"], validate=True),
            deadline=min(deadlines) if deadlines else None,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadInput(f"malformed hand-over event: {exc}") from exc


def handover_answer(result: HandlerResult) -> dict[str, Any]:
    """What the pinned version answers a hand-over with."""
    if isinstance(result, Redeliver):
        return {"result": "redeliver", "seconds": result.seconds}
    return {"result": "ack"}


def _result_of(answer: Mapping[str, Any]) -> HandlerResult:
    if answer.get("result") == "ack":
        return Ack()
    if answer.get("result") == "redeliver":
        return Redeliver(float(answer.get("seconds", 1.0)))
    raise Transient(f"a hand-over was answered with {dict(answer)!r}")


class LambdaHandover:
    """The runtime's :class:`~world_aws.worker.deployments.Handover` on AWS: deployments are versions."""

    def __init__(self, invoker: Invoker, function: str) -> None:
        self._invoker = invoker
        self._function = function

    def hand_over(self, deployment_id: str, delivery: Delivery) -> HandlerResult:
        if not deployment_id.isdigit():
            raise DeploymentGone(f"deployment {deployment_id!r} is not a version of {self._function}")
        return _result_of(self._invoker.invoke(self._function, deployment_id, handover_event(delivery)))


def list_deployments(client: LambdaClient, function: str, runs: RunStore) -> list[Deployment]:
    """The function's published versions, oldest first, each with its live runs (``runs.count_live``)."""
    versions: list[dict[str, Any]] = []
    with mapped_errors("Lambda ListVersionsByFunction", resource=f"function {function}"):
        for page in client.get_paginator("list_versions_by_function").paginate(FunctionName=function):
            versions.extend(v for v in page["Versions"] if str(v["Version"]).isdigit())
    versions.sort(key=lambda v: int(v["Version"]))
    newest = versions[-1]["Version"] if versions else None
    return [
        Deployment(
            deployment_id=str(v["Version"]),
            live_runs=runs.count_live(str(v["Version"])),
            newest=v["Version"] == newest,
        )
        for v in versions
    ]


def retire(client: LambdaClient, function: str, version: str, runs: RunStore) -> None:
    """Delete an older version no live run is pinned to.

    Raises:
        BadInput: not a version number, or the newest version.
        NotFound: no such version.
        DeploymentInUse: a run is still pinned to it.
    """
    if not version.isdigit():
        raise BadInput(f"a deployment is a version number of {function}, not {version!r}")
    known = {d.deployment_id: d for d in list_deployments(client, function, runs)}
    if version not in known:
        raise NotFound(f"{function} has no version {version} (it has {sorted(known, key=int)})")
    if known[version].newest:
        raise BadInput(f"version {version} is the newest: new runs start on it")
    if known[version].live_runs:
        raise DeploymentInUse(
            f"version {version} still has {known[version].live_runs} live run(s) pinned to it; "
            "retire it once they end (or cancel them)"
        )
    with mapped_errors("Lambda DeleteFunction", resource=f"function {function}:{version}"):
        client.delete_function(FunctionName=function, Qualifier=version)


class LambdaDeployments:
    """The ``Deployments`` of a stack on AWS: the workflow function's versions (``list_deployments``)."""

    def __init__(self, client: LambdaClient, function: str, runs: RunStore) -> None:
        self._client = client
        self._function = function
        self._runs = runs

    def list(self) -> list[Deployment]:
        return list_deployments(self._client, self._function, self._runs)

    def retire(self, deployment_id: str) -> None:
        retire(self._client, self._function, deployment_id, self._runs)
