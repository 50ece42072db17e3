"""The encryption scan (issue 42): with encryption on, no payload reaches DynamoDB, S3 or SQS in plaintext.

A workflow (``sealed_app``) puts a marker in its input, a step output, a step error, a
hook payload, a stream value and a step input over 128 KiB. The embedded stack runs it
with ``encrypt=True`` (a moto KMS key); then every item of the table, every object of
the bucket and every message sent to the queues is searched for the marker (also
inside zlib-compressed attributes). The run still reads back whole through the World.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import time
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from world_aws.api.server import ApiServer, serve_api
from world_aws.aws.config import AwsConfig
from world_aws.aws.local_clients import clients_for_endpoint
from world_aws.aws.world import create_aws_world
from world_aws.cli.main import main
from world_aws.contract.payload import InlineStepInput, InvokePayload, StepInputRef
from world_aws.contract.records import EventType, StepCompletedData, StepFailedData
from world_aws.contract.sealing import ENCRYPTED_MARKER, is_sealed
from world_aws.contract.transport import decode_body
from world_aws.errors import BadInput, NotFound, PayloadEncrypted
from world_aws.local.stack import LocalStack, local_config, local_stack
from world_aws.runtime.runtime import Runtime
from world_aws.sealing.envelope import carried_key
from world_aws.serde.errors import decode_error

from . import sealed_app
from .sealed_app import BIG_INPUT_CHARS, MARK, TOKEN, app, scan

MARK_BYTES = MARK.encode()


def wait_for_hook(stack: LocalStack, token: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            stack.world.hooks.get_by_token(token)
            return
        except NotFound:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _blobs(value: Any) -> Iterator[bytes]:
    """Every bytes or str value inside a DynamoDB item (attribute-value form), recursively."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _blobs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _blobs(v)
    elif isinstance(value, bytes):
        yield value
    elif isinstance(value, str):
        yield value.encode()


def holds_marker(data: bytes) -> bool:
    """Whether ``data`` shows the marker: as it is, base64-decoded, or zlib-inflated."""
    candidates = [data]
    try:
        candidates.append(base64.b64decode(data, validate=True))
    except ValueError:
        pass
    for candidate in list(candidates):
        try:
            candidates.append(zlib.decompress(candidate))
        except zlib.error:
            pass
    return any(MARK_BYTES in candidate for candidate in candidates)


@pytest.fixture(scope="module")
def sealed_run() -> Iterator[tuple[LocalStack, str, Any, list[bytes]]]:
    sent: list[bytes] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        bodies = [params.get("MessageBody")] + [e.get("MessageBody") for e in params.get("Entries", [])]
        sent.extend(b.encode() for b in bodies if b)

    # Every step by message (no inline execution): the step messages carry their inputs.
    config = replace(local_config(), max_inline_steps=0)
    with local_stack(app, encrypt=True, run_schedules=False, config=config) as stack:
        aws = stack.world.inner  # type: ignore[attr-defined]
        for operation in ("SendMessage", "SendMessageBatch"):
            aws.clients.sqs.meta.events.register(f"provide-client-params.sqs.{operation}", capture)
        handle = stack.runtime.start(scan, f"input {MARK}")
        wait_for_hook(stack, TOKEN)
        stack.runtime.resume_hook(TOKEN, f"approved {MARK}")
        result = handle.result(timeout=120)
        yield stack, handle.run_id, result, sent


def test_no_marker_in_the_table_the_bucket_or_the_queues(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]],
) -> None:
    stack, run_id, _result, sent = sealed_run
    aws = stack.world.inner  # type: ignore[attr-defined]
    clients, config = aws.clients, aws.config
    # THEN no item of the table shows the marker
    items = [
        item
        for page in clients.dynamodb.get_paginator("scan").paginate(TableName=config.table_name)
        for item in page["Items"]
    ]
    assert len(items) > 10
    leaks = [item for item in items if any(holds_marker(b) for b in _blobs(item))]
    assert leaks == []
    # nor any object of the bucket (the big step input is there, sealed)
    keys = [o["Key"] for o in clients.s3.list_objects_v2(Bucket=config.bucket_name).get("Contents", [])]
    bodies = [clients.s3.get_object(Bucket=config.bucket_name, Key=k)["Body"].read() for k in keys]
    assert bodies and all(is_sealed(body) for body in bodies)
    assert not any(holds_marker(body) for body in bodies)
    # nor any message sent to the queues (step inputs, the first message's run input), nor one left
    payloads = [decode_body(body) for body in sent]
    inputs = [p.step_input for p in payloads if isinstance(p, InvokePayload) and p.step_input is not None]
    assert any(isinstance(i, InlineStepInput) and is_sealed(i.input) for i in inputs)
    assert any(isinstance(i, StepInputRef) for i in inputs)  # the big one, in S3 (sealed above)
    assert all(is_sealed(i.input) for i in inputs if isinstance(i, InlineStepInput))
    assert not any(holds_marker(body) for body in sent)
    for url in clients.sqs.list_queues().get("QueueUrls", []):
        left = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        assert not any(holds_marker(m["Body"].encode()) for m in left.get("Messages", []))
    # and the run keeps its wrapped data key once, in its input's envelope, not on the run item
    stored = aws.runs.inner.get(run_id)  # the AWS World's run store under the sealing layer
    assert stored.input is not None and carried_key(stored.input) is not None


def test_the_run_reads_back_whole_through_the_world(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]],
) -> None:
    stack, run_id, result, _sent = sealed_run
    loads = stack.runtime.app.serializer.loads
    # THEN the result, and each payload, decode to what the workflow wrote
    assert result["out"] == f"output {MARK} of input {MARK}"
    assert result["size"] == BIG_INPUT_CHARS + len(MARK)
    assert MARK in str(result["failed"]) and result["approval"] == f"approved {MARK}"
    run = stack.world.runs.get(run_id)
    assert loads(run.input) == ([f"input {MARK}"], {}) or MARK in repr(loads(run.input))
    events = stack.world.events.list(run_id)
    outputs = [
        loads(e.data.output) for e in events if isinstance(e.data, StepCompletedData) and e.data.output
    ]
    assert f"output {MARK} of input {MARK}" in outputs
    errors = [decode_error(e.data.error) for e in events if isinstance(e.data, StepFailedData)]
    assert any(MARK in error.message and error.stack for error in errors)
    received = [e for e in events if e.type is EventType.HOOK_RECEIVED]
    assert loads(received[0].data.payload) == f"approved {MARK}"  # type: ignore[attr-defined]
    big = [s for s in stack.world.steps.list(run_id) if s.step_name.endswith("measure")]
    assert (
        MARK in loads(big[0].input)[0][0]
        if isinstance(loads(big[0].input), tuple)
        else MARK in repr(loads(big[0].input))
    )
    chunks = stack.world.streams.read(run_id, "default")
    assert any(MARK in repr(loads(c.data)) for c in chunks)


def _cli(server: ApiServer, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--api", server.url], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def test_the_api_and_the_cli_decrypt_with_kms_decrypt(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]],
) -> None:
    stack, run_id, _result, _sent = sealed_run
    with serve_api(stack.runtime, port=0) as server:
        code, text = _cli(server, "result", run_id)
        assert code == 0 and f"output {MARK} of input {MARK}" in text
        code, text = _cli(server, "inspect", run_id)
        assert code == 0 and f"refused {MARK}" in text
        code, text = _cli(server, "stream", run_id)
        assert code == 0 and f"streamed {MARK}" in text


@pytest.fixture
def reader_without_decrypt(sealed_run: tuple[LocalStack, str, Any, list[bytes]]) -> Iterator[Runtime]:
    """A process on the same stack whose credentials lack kms:Decrypt (KMS answers AccessDenied)."""
    stack = sealed_run[0]
    env = {k: v for k, v in stack.env.items() if k != "WORKFLOW_KMS_KEY_ID"}
    config = AwsConfig.from_env(env)
    clients = clients_for_endpoint(stack.endpoint_url or "", config.region)
    assert clients.make_kms is not None
    clients = dataclasses.replace(clients, kms=clients.make_kms())  # this reader's own KMS client

    def refuse(**_: Any) -> None:
        error = {"Code": "AccessDeniedException", "Message": "not authorized to perform: kms:Decrypt"}
        raise ClientError({"Error": error}, "Decrypt")

    clients.kms.meta.events.register("before-call.kms.Decrypt", refuse)
    world = create_aws_world(config, clients=clients)
    runtime = Runtime(world, app)
    try:
        yield runtime
    finally:
        runtime.close()
        world.close()
        clients.close()


def test_without_kms_decrypt_the_api_and_the_cli_show_encrypted(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]], reader_without_decrypt: Runtime
) -> None:
    run_id = sealed_run[1]
    # GIVEN a reader whose KMS refuses Decrypt: the payloads stay sealed in what it reads
    run = reader_without_decrypt.world.runs.get(run_id)
    assert is_sealed(run.output) and is_sealed(run.input)
    with pytest.raises(PayloadEncrypted, match="kms:Decrypt"):
        reader_without_decrypt.app.serializer.loads(run.output or b"")
    # WHEN its API and the CLI over it show the run
    with serve_api(reader_without_decrypt, port=0) as server:
        code, text = _cli(server, "result", run_id)
        assert code == 0 and ENCRYPTED_MARKER in text and MARK not in text
        code, text = _cli(server, "inspect", run_id)
        assert code == 0 and ENCRYPTED_MARKER in text and MARK not in text
        code, text = _cli(server, "stream", run_id)
        assert code == 0 and ENCRYPTED_MARKER in text and MARK not in text
        events = json.loads(urllib.request.urlopen(f"{server.url}/runs/{run_id}/events?payloads=true").read())
    # THEN every payload shows as encrypted, nothing as plaintext, nothing crashed
    assert MARK not in json.dumps(events) and ENCRYPTED_MARKER in json.dumps(events)


def test_a_payload_moved_to_another_field_or_run_does_not_open(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]],
) -> None:
    stack, run_id, _result, _sent = sealed_run
    sealer = stack.world.payloads
    sealed = sealer.seal(run_id, "output", b"\xa0")
    assert is_sealed(sealed)
    assert sealer.open(run_id, "output", sealed) == b"\xa0"  # type: ignore[attr-defined]
    with pytest.raises(BadInput, match="moved from another run or field"):
        sealer.open(run_id, "input", sealed)  # type: ignore[attr-defined]
    step_input = sealer.seal(run_id, "input", b"\xa0")
    with pytest.raises(BadInput, match="moved from another run or field"):
        sealer.open(run_id, "run_input", step_input)  # type: ignore[attr-defined]
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(BadInput, match="altered"):
        sealer.open(run_id, "output", tampered)  # type: ignore[attr-defined]
    with pytest.raises(BadInput):  # another run has another key: its id is not this run's
        sealer.open("wrun_other", "output", sealed)  # type: ignore[attr-defined]


def test_replay_decrypts_with_kms_decrypt_and_says_encrypted_without(
    sealed_run: tuple[LocalStack, str, Any, list[bytes]], reader_without_decrypt: Runtime
) -> None:
    stack, run_id, _result, _sent = sealed_run
    app_ref = f"{sealed_app.__name__}:app"  # the module name its steps were recorded under
    with serve_api(stack.runtime, port=0) as server:
        code, text = _cli(server, "replay", app_ref, "--workflow", "scan")
    assert code == 0 and run_id in text and "ok" in text, text
    with serve_api(reader_without_decrypt, port=0) as server:
        code, text = _cli(server, "replay", app_ref, "--workflow", "scan")
    assert code != 0 and "encrypted" in text and MARK not in text
