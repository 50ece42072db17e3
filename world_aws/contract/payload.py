"""The invoke payload of both queues (contract §4.2), validated with pydantic at the boundary.

Rules:
* payload bytes (``step_input.input``, ``run_input.input``, ``hook_input.payload``)
  must be ``bytes``: a str, list or number fails parsing, so a mangled payload is
  never written into the log;
* unknown fields are ignored (a newer producer may add fields; an older consumer
  must not dead-letter them), every known field is type-checked strictly: no
  coercion (a number is not a datetime, bytes are not a str, 1.0 is not an int);
* ``step_input`` has exactly one shape: ``{input}`` or ``{ref, size, sha256}``;
  a map with both, or neither, is refused rather than guessed;
* ``step_id`` and ``step_name`` come together, and ``step_input`` only with them;
* ``run_context`` needs ``deployment_id`` and ``spec_version``; its other fields
  are optional;
* ``requested_at`` is timezone-aware (CBOR cannot carry a naive datetime);
* a health check ``{health_check: true, correlation_id}`` is recognised first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Discriminator, Field, Strict, Tag, model_validator

StrictBytes = Annotated[bytes, Strict()]
StrictStr = Annotated[str, Strict()]
StrictInt = Annotated[int, Strict()]
StrictStrMap = dict[StrictStr, StrictStr]
NonEmptyStr = Annotated[str, Strict(), Field(min_length=1)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class InlineStepInput(_Model):
    input: StrictBytes


class StepInputRef(_Model):
    """Claim check: the step input lives in blob storage (contract §5.2)."""

    ref: NonEmptyStr
    size: StrictInt = Field(ge=0)
    sha256: Annotated[str, Strict(), Field(pattern=r"^[0-9a-f]{64}$")]


def _step_input_shape(value: Any) -> str | None:
    """Which shape a step_input is; None (a validation error) when it has both keys or neither."""
    if isinstance(value, InlineStepInput | StepInputRef):
        return type(value).__name__
    if not isinstance(value, dict):
        return None
    has_input, has_ref = "input" in value, "ref" in value
    if has_input == has_ref:
        return None
    return "InlineStepInput" if has_input else "StepInputRef"


StepInput = Annotated[
    Annotated[InlineStepInput, Tag("InlineStepInput")] | Annotated[StepInputRef, Tag("StepInputRef")],
    Discriminator(
        _step_input_shape,
        custom_error_type="step_input_shape",
        custom_error_message="must be a map with exactly one of 'input' (bytes) or 'ref' (a blob reference)",
    ),
]


class RunContext(_Model):
    """Immutable run identity stamped on step messages (contract §5.1). Never carries status.

    ``deployment_id`` and ``spec_version`` are required; ``started_at`` and
    ``root_run_id`` are optional on parse, as upstream has them: a producer that
    omits them is not dead-lettered. Every producer here stamps all four.
    """

    deployment_id: StrictStr
    spec_version: StrictInt
    started_at: StrictInt | None = None  # epoch milliseconds
    root_run_id: StrictStr | None = None
    # world-aws's own (not in contract §4.2): the run's workflow, so a step consumer can label its
    # metrics with it without reading the run (functions/_metrics.py).
    workflow_name: StrictStr | None = None


class RunInput(_Model):
    """Creation data on the first workflow message of a new run (contract §6.1)."""

    workflow_name: StrictStr
    deployment_id: StrictStr
    spec_version: StrictInt
    input: StrictBytes | None = None
    input_ref: StepInputRef | None = None
    attributes: StrictStrMap = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_input(self) -> RunInput:
        if self.input is not None and self.input_ref is not None:
            raise ValueError("run_input carries both 'input' and 'input_ref'; exactly one is allowed")
        return self


class HookInput(_Model):
    """A hook resume carried on the queue (contract §6.2)."""

    resume_id: StrictStr
    hook_id: StrictStr
    token: StrictStr
    payload: StrictBytes | None = None
    payload_ref: StepInputRef | None = None
    payload_digest: StrictStr

    @model_validator(mode="after")
    def _one_payload(self) -> HookInput:
        if (self.payload is None) == (self.payload_ref is None):
            raise ValueError("hook_input needs exactly one of 'payload' and 'payload_ref'")
        return self


class InvokePayload(_Model):
    run_id: NonEmptyStr
    step_id: NonEmptyStr | None = None
    step_name: NonEmptyStr | None = None
    step_input: StepInput | None = None
    run_context: RunContext | None = None
    run_input: RunInput | None = None
    hook_input: HookInput | None = None
    trace_carrier: StrictStrMap = Field(default_factory=dict)
    requested_at: Annotated[AwareDatetime, Strict()] | None = None
    deployment_mismatch_retry_count: StrictInt = Field(default=0, ge=0)
    # A reconciler's wake (worker/reconciler.py): the continuation re-publishes the steps
    # created but never started under "<step key>:<reconcile_tag>", not their own key, whose
    # retention would absorb the publish if their first message was lost after it was sent.
    reconcile_tag: NonEmptyStr | None = None
    # A hand-on (worker/orchestrator.py): "<message id>#<receive count>" of the delivery
    # whose continuation failed after progress; the inline steps it owned are this one's
    # to take over at once (worker/inline.py, ``Owner.succeeds``).
    succeeds: NonEmptyStr | None = None
    # A sleep's wake-up (worker/orchestrator.py): the wait it was published for. Handled
    # before that wait is due (the consumer's clock behind the producer's), the pass
    # publishes the rest under a key of this message's own, not the wait's, whose
    # retention would absorb it.
    wakes: NonEmptyStr | None = None
    # A start gate's due message (client/coalesce.py, worker/gates.py): the gate's scope;
    # ``run_id`` names the debounce window or batch whose run it starts once due.
    flush: NonEmptyStr | None = None

    @model_validator(mode="after")
    def _step_fields_together(self) -> InvokePayload:
        if (self.step_id is None) != (self.step_name is None):
            raise ValueError("step_id and step_name must be both present or both absent")
        if self.step_input is not None and self.step_id is None:
            raise ValueError("step_input is only allowed on a step message (with step_id and step_name)")
        if self.succeeds is not None and self.step_id is not None:
            raise ValueError("succeeds is only allowed on a workflow message (without step_id)")
        if self.wakes is not None and self.step_id is not None:
            raise ValueError("wakes is only allowed on a workflow message (without step_id)")
        if self.flush is not None and (self.step_id is not None or self.run_input is not None):
            raise ValueError("flush is only allowed on a gate's due message (without step_id or run_input)")
        return self

    @property
    def is_step(self) -> bool:
        return self.step_id is not None


class HealthCheck(_Model):
    health_check: Literal[True]
    correlation_id: StrictStr
