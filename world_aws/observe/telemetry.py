"""Spans and structured logs of the runtime (contract §5.3).

Spans go through the OpenTelemetry API, which is a no-op unless the host
configures an SDK. Logs are JSON (Powertools Logger in Lambda, stdlib logging
elsewhere) and carry run_id and step_id as extra fields.
"""

from __future__ import annotations

import logging

from opentelemetry import trace

TRACER = trace.get_tracer("world_aws")
LOG = logging.getLogger("world_aws")

# Span attribute names (contract §5.3).
RUN_ID = "workflow.run_id"
# The run's workflow, on the start and continuation spans (world-aws's own; see observe/tracing.py).
WORKFLOW_NAME = "workflow.name"
STEP_ID = "workflow.step.id"
STEP_NAME = "workflow.step.name"
STEP_ATTEMPT = "workflow.step.attempt"
DISPATCH_PROLOGUE = "workflow.step.dispatch_prologue"
MATERIALIZED = "workflow.step.resilient_dispatch_materialized"
OUTCOME = "workflow.step.outcome"
# True on the span of a step attempt run inline by a continuation (worker/inline.py; world-aws's own).
INLINE = "workflow.step.inline"
# What the last-completer check decided after a terminal outcome (not in contract §5.3; world-aws's own):
# "others_pending", "others_pending_woken" (a step was created after this outcome: a wake-up left,
# worker/executor.py), "claimed", "claimed_by_another", "read" (a redelivered finished step), and
# "run_terminal" when the run it got had ended.
CONTINUATION = "workflow.step.continuation"
