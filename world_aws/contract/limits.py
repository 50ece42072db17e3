"""Numbers every layer designs around, each with the limit it comes from."""

from __future__ import annotations

# SPEC §5.2 / §7.3: payloads above 128 KiB go to S3 and are replaced by a reference.
# Far below DynamoDB's 400 KB item limit and SQS's 256 KiB/1 MiB message limit,
# even after base64 (4/3) inflation.
MAX_INLINE_PAYLOAD_BYTES = 131_072

# SQS DelaySeconds is 0..900 (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
SQS_MAX_DELAY_SECONDS = 900

# SQS visibility timeout is at most 12 h.
SQS_MAX_VISIBILITY_SECONDS = 43_200

# SPEC §4.3: the handler-level delivery cap, below the redrive maxReceiveCount.
DEFAULT_MAX_QUEUE_DELIVERIES = 48

# Retention of an idempotency key (SPEC §4.4; at least 24 h).
IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600
