"""Numbers every layer designs around, each with the limit it comes from."""

from __future__ import annotations

# contract §5.2 / §7.3: payloads above 128 KiB go to S3 and are replaced by a reference.
# Far below DynamoDB's 400 KB item limit and SQS's 256 KiB/1 MiB message limit,
# even after base64 (4/3) inflation.
MAX_INLINE_PAYLOAD_BYTES = 131_072

# SQS DelaySeconds is 0..900 (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
SQS_MAX_DELAY_SECONDS = 900

# The furthest ahead any message may be due (a sleep, a retry delay, a chained hop's wf_due_at):
# one year and a day, the execution limit of AWS's own durable Lambda functions (ExecutionTimeout
# <= 31,622,400 s, botocore CreateFunction.DurableConfig). A due time beyond it is refused on both
# sides of the queue, so a forged wf_due_at cannot keep a message hopping every 15 minutes forever.
MAX_DELAY_SECONDS = 31_622_400

# SQS visibility timeout is at most 12 h.
SQS_MAX_VISIBILITY_SECONDS = 43_200

# contract §4.3: the handler-level delivery cap, below the redrive maxReceiveCount.
DEFAULT_MAX_QUEUE_DELIVERIES = 48

# Retention of an idempotency key (contract §4.4; at least 24 h).
IDEMPOTENCY_RETENTION_SECONDS = 24 * 3600
