"""Queue message transport and the invoke payload (contract §4.1, §4.2): round trips and strict decoding."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import cbor2
import pytest

from world_aws.contract.payload import (
    HealthCheck,
    HookInput,
    InlineStepInput,
    InvokePayload,
    RunContext,
    RunInput,
    StepInputRef,
)
from world_aws.contract.transport import (
    decode_body,
    decode_body_bytes,
    decode_payload,
    encode_body,
    encode_body_bytes,
    encode_payload,
    strict_cbor_loads,
)
from world_aws.errors import BadInput

SHA = "0123456789abcdef" * 4


def full_payload(step_input: InlineStepInput | StepInputRef) -> InvokePayload:
    return InvokePayload(
        run_id="wrun_01J0000000000000000000000",
        step_id="step_01",
        step_name="charge",
        step_input=step_input,
        run_context=RunContext(
            deployment_id="dpl-1", spec_version=4, started_at=1_767_225_600_123, root_run_id="wrun_root"
        ),
        run_input=RunInput(
            workflow_name="checkout",
            deployment_id="dpl-1",
            spec_version=4,
            input=b"\x82\x01\x02",
            attributes={"$root_run_id": "wrun_root", "tenant": "acme"},
        ),
        hook_input=HookInput(
            resume_id="res_1", hook_id="hook_1", token="approve:o-1", payload=b"\xf5", payload_digest="d1"
        ),
        trace_carrier={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        requested_at=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        deployment_mismatch_retry_count=2,
    )


def raw_step_message(**fields: Any) -> dict[str, Any]:
    """A valid step message as a plain map, with ``fields`` replaced (None removes one)."""
    message: dict[str, Any] = {"run_id": "wrun_1", "step_id": "step_1", "step_name": "charge"}
    message["step_input"] = {"input": b"\x01"}
    message.update(fields)
    return {k: v for k, v in message.items() if v is not None}


def body_of(value: Any) -> str:
    return base64.b64encode(cbor2.dumps(value)).decode("ascii")


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "step_input",
    [
        InlineStepInput(input=b"\x00\xffbytes stay bytes"),
        StepInputRef(ref="payloads/ab/cd", size=200_000, sha256=SHA),
    ],
    ids=["inline", "ref"],
)
def test_payload_with_every_field_round_trips_through_the_body(
    step_input: InlineStepInput | StepInputRef,
) -> None:
    # GIVEN a payload with every field set
    payload = full_payload(step_input)
    # WHEN it is encoded into an SQS body and decoded again
    body = encode_body(payload)
    decoded = decode_body(body)
    # THEN it is equal, field for field, and the body is plain ASCII text
    assert decoded == payload
    assert body.isascii()
    assert isinstance(decoded, InvokePayload)
    assert type(decoded.step_input) is type(step_input)
    assert decoded.requested_at == payload.requested_at
    assert decoded.is_step


def test_a_wake_up_names_its_wait_and_round_trips() -> None:
    payload = InvokePayload(run_id="wrun_1", wakes="wait_1", succeeds="m-1#2")
    assert decode_body(encode_body(payload)) == payload


def test_run_input_and_hook_input_by_reference_round_trip() -> None:
    ref = StepInputRef(ref="payloads/x", size=1, sha256=SHA)
    payload = InvokePayload(
        run_id="wrun_1",
        run_input=RunInput(workflow_name="w", deployment_id="d", spec_version=3, input_ref=ref),
        hook_input=HookInput(resume_id="r", hook_id="h", token="t", payload_ref=ref, payload_digest="x"),
        requested_at=datetime(2026, 1, 1, tzinfo=timezone(timedelta(hours=-5))),
    )
    assert decode_payload(encode_payload(payload)) == payload


def test_minimal_payload_round_trips_and_defaults_are_omitted_on_the_wire() -> None:
    payload = InvokePayload(run_id="wrun_1")
    assert cbor2.loads(encode_payload(payload)) == {"run_id": "wrun_1"}
    decoded = decode_payload(encode_payload(payload))
    assert decoded == payload
    assert isinstance(decoded, InvokePayload) and not decoded.is_step


def test_health_check_is_recognised_before_the_invoke_schema() -> None:
    # GIVEN a health check, even one that also carries invoke fields
    body = encode_body(HealthCheck(health_check=True, correlation_id="hc-1"))
    mixed = body_of({"health_check": True, "correlation_id": "hc-2", "run_id": "wrun_1"})
    # THEN it decodes as a health check
    assert decode_body(body) == HealthCheck(health_check=True, correlation_id="hc-1")
    assert decode_body(mixed) == HealthCheck(health_check=True, correlation_id="hc-2")


def test_body_helpers_for_already_encoded_cbor_round_trip() -> None:
    data = encode_payload(InvokePayload(run_id="wrun_1"))
    assert decode_body_bytes(encode_body_bytes(data)) == data
    assert decode_body_bytes(encode_body_bytes(data).encode("ascii")) == data


def test_unknown_fields_are_ignored_at_every_level() -> None:
    # GIVEN a message from a newer producer with fields this consumer does not know
    message = raw_step_message(
        future_field={"anything": [1, 2]},
        step_input={"input": b"\x01", "compression": "zstd"},
        run_context={
            "deployment_id": "d",
            "spec_version": 5,
            "started_at": 1,
            "root_run_id": "r",
            "region": "x",
        },
    )
    # WHEN it is decoded THEN the known fields are read and the rest is dropped
    decoded = decode_body(body_of(message))
    assert isinstance(decoded, InvokePayload)
    assert decoded.step_input == InlineStepInput(input=b"\x01")
    assert decoded.run_context is not None and decoded.run_context.spec_version == 5
    assert not hasattr(decoded, "future_field")


def test_run_context_needs_only_deployment_id_and_spec_version() -> None:
    # GIVEN a producer that stamps the run identity without started_at and root_run_id (upstream's optionals)
    message = raw_step_message(run_context={"deployment_id": "d", "spec_version": 5})
    # WHEN it is decoded THEN it parses, the missing fields None, and they stay absent when re-encoded
    decoded = decode_body(body_of(message))
    assert isinstance(decoded, InvokePayload)
    assert decoded.run_context == RunContext(deployment_id="d", spec_version=5)
    assert decoded.run_context.started_at is None and decoded.run_context.root_run_id is None
    assert cbor2.loads(encode_payload(decoded))["run_context"] == {"deployment_id": "d", "spec_version": 5}


# --- strict decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("not base64!", "not base64"),
        ("QUJD\n", "not base64"),
        ("", "empty message"),
        (base64.b64encode(b"\xff\xfe\xfd").decode(), "malformed CBOR"),
        (base64.b64encode(cbor2.dumps({"run_id": "wrun_1"}) + b"\x00").decode(), "1 trailing byte"),
        (base64.b64encode(cbor2.dumps({"run_id": "wrun_1"})[:-3]).decode(), "truncated CBOR"),
        (body_of(["run_id", "wrun_1"]), "must be a CBOR map, got list"),
        (body_of("wrun_1"), "must be a CBOR map, got str"),
    ],
    ids=["not-base64", "base64-with-newline", "empty", "not-cbor", "trailing", "truncated", "list", "str"],
)
def test_malformed_bodies_are_bad_input_naming_the_problem(body: str, problem: str) -> None:
    with pytest.raises(BadInput, match=problem):
        decode_body(body)


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (raw_step_message(run_id=None), r"run_id: Field required"),
        (raw_step_message(run_id=""), r"run_id: String should have at least 1 character"),
        (raw_step_message(run_id=b"wrun_1"), r"run_id: Input should be a valid string"),
        (raw_step_message(step_input={"input": "text"}), r"step_input\.input: Input should be a valid bytes"),
        (raw_step_message(step_input={"input": [1, 2]}), r"step_input\.input: Input should be a valid bytes"),
        (raw_step_message(step_input={"input": 7}), r"step_input\.input: Input should be a valid bytes"),
        (
            raw_step_message(step_input={"ref": "k", "size": 1, "sha256": "xyz"}),
            r"step_input\.sha256: String should",
        ),
        (raw_step_message(step_input={"ref": "k", "size": 1, "sha256": SHA.upper()}), r"step_input\.sha256"),
        (raw_step_message(step_input={"ref": "k", "size": -1, "sha256": SHA}), r"step_input\.size"),
        (
            raw_step_message(step_input={"input": b"", "ref": "k", "size": 0, "sha256": SHA}),
            r"exactly one of",
        ),
        (raw_step_message(step_input={}), r"step_input: must be a map with exactly one of"),
        (raw_step_message(step_input=b"\x01"), r"step_input: must be a map with exactly one of"),
        (raw_step_message(step_name=None), r"step_id and step_name must be both present"),
        (raw_step_message(step_id=None, step_name=None), r"step_input is only allowed on a step message"),
        (raw_step_message(succeeds="m-1#3"), r"succeeds is only allowed on a workflow message"),
        (raw_step_message(wakes="wait_1"), r"wakes is only allowed on a workflow message"),
        (raw_step_message(requested_at=1_767_225_600), r"requested_at: Input should be a valid datetime"),
        (
            raw_step_message(requested_at="2026-01-01T00:00:00Z"),
            r"requested_at: Input should be a valid datetime",
        ),
        (
            raw_step_message(trace_carrier={"traceparent": b"00-ab"}),
            r"trace_carrier\.traceparent: .*valid string",
        ),
        (
            raw_step_message(deployment_mismatch_retry_count=1.0),
            r"deployment_mismatch_retry_count: .*valid integer",
        ),
        (
            raw_step_message(deployment_mismatch_retry_count=-1),
            r"deployment_mismatch_retry_count: .*greater than",
        ),
        (raw_step_message(run_context={"deployment_id": "d"}), r"run_context\.spec_version: Field required"),
        (
            raw_step_message(
                run_input={"workflow_name": "w", "deployment_id": "d", "spec_version": 3, "input": "x"}
            ),
            r"run_input\.input: Input should be a valid bytes",
        ),
        (
            raw_step_message(
                hook_input={"resume_id": "r", "hook_id": "h", "token": "t", "payload_digest": "d"}
            ),
            r"hook_input: hook_input needs exactly one of 'payload' and 'payload_ref'",
        ),
        ({"health_check": True}, r"invalid health check: correlation_id: Field required"),
    ],
)
def test_invalid_fields_are_bad_input_naming_the_field(message: dict[str, Any], problem: str) -> None:
    with pytest.raises(BadInput, match=problem):
        decode_body(body_of(message))


def test_repeated_map_key_is_refused() -> None:
    # GIVEN a CBOR map that states run_id twice (cbor2 would otherwise keep the last one)
    data = b"\xa2" + cbor2.dumps("run_id") + cbor2.dumps("a") + cbor2.dumps("run_id") + cbor2.dumps("b")
    with pytest.raises(BadInput, match="Duplicate map key: 'run_id'"):
        decode_payload(data)


def test_cbor_semantic_tags_that_fail_to_decode_are_bad_input() -> None:
    # an epoch out of range: cbor2 raises while decoding a tag the transport accepts
    with pytest.raises(BadInput, match="malformed CBOR"):
        decode_payload(cbor2.dumps({"run_id": "wrun_1", "x": cbor2.CBORTag(1, 10**30)}))


def test_strict_cbor_loads_reads_exactly_one_item() -> None:
    assert strict_cbor_loads(cbor2.dumps([1, b"x"])) == [1, b"x"]
    with pytest.raises(BadInput, match="2 trailing byte"):
        strict_cbor_loads(cbor2.dumps(1) + cbor2.dumps(2) + b"\x00")


def test_naive_requested_at_is_refused_when_the_payload_is_built() -> None:
    # CBOR cannot carry a naive datetime: refuse it at the producer, not at publish time
    with pytest.raises(ValueError, match="timezone"):
        InvokePayload(run_id="wrun_1", requested_at=datetime(2026, 1, 1))
