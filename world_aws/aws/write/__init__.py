"""The DynamoDB write path: each event type's plan and writer, the run item as sequencer and fence.

Import rule: it imports ``codec`` (and ``errors``, ``contract``), never ``read`` or ``queue``.
"""
