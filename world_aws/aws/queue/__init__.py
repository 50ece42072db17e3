"""SQS: the World's queue, its wire format, the visibility heartbeat, Lambda's SQS batches.

Import rule: it imports ``codec`` (for idempotency keys' items), never ``write`` or ``read``.
"""
