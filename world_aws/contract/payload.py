"""The invoke payload of both queues (SPEC §4.2), validated with pydantic at the boundary.

Rules:
* payload bytes (``step_input.input``, ``run_input.input``, ``hook_input.payload``)
  must be ``bytes``: a str, list or number fails parsing, so a mangled payload is
  never written into the log;
* unknown fields are ignored (a newer producer may add fields; an older consumer
  must not dead-letter them), every known field is type-checked strictly;
* a health check ``{health_check: true, correlation_id}`` is recognised first.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

StrictBytes = Annotated[bytes, Strict()]
StrictStr = Annotated[str, Strict()]
StrictInt = Annotated[int, Strict()]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class InlineStepInput(_Model):
    input: StrictBytes


class StepInputRef(_Model):
    """Claim check: the step input lives in blob storage (SPEC §5.2)."""

    ref: StrictStr
    size: StrictInt = Field(ge=0)
    sha256: Annotated[str, Strict(), Field(pattern=r"^[0-9a-f]{64}$")]


class RunContext(_Model):
    """Immutable run identity stamped on step messages (SPEC §5.1). Never carries status."""

    deployment_id: StrictStr
    spec_version: StrictInt
    started_at: StrictInt  # epoch milliseconds
    root_run_id: StrictStr


class RunInput(_Model):
    """Creation data on the first workflow message of a new run (SPEC §6.1)."""

    workflow_name: StrictStr
    deployment_id: StrictStr
    spec_version: StrictInt
    input: StrictBytes | None = None
    input_ref: StepInputRef | None = None
    attributes: dict[str, str] = Field(default_factory=dict)


class HookInput(_Model):
    """A hook resume carried on the queue (SPEC §6.2)."""

    resume_id: StrictStr
    hook_id: StrictStr
    token: StrictStr
    payload: StrictBytes | None = None
    payload_ref: StepInputRef | None = None
    payload_digest: StrictStr


class InvokePayload(_Model):
    run_id: Annotated[str, Strict(), Field(min_length=1)]
    step_id: StrictStr | None = None
    step_name: StrictStr | None = None
    step_input: InlineStepInput | StepInputRef | None = None
    run_context: RunContext | None = None
    run_input: RunInput | None = None
    hook_input: HookInput | None = None
    trace_carrier: dict[str, str] = Field(default_factory=dict)
    requested_at: datetime | None = None
    deployment_mismatch_retry_count: StrictInt = 0

    @property
    def is_step(self) -> bool:
        return self.step_id is not None


class HealthCheck(_Model):
    health_check: Literal[True]
    correlation_id: StrictStr
