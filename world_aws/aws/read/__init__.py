"""The DynamoDB read path: entity stores, the gap-free log reader, schedules and streams.

Import rule: it imports ``codec`` and the write path's marks (sequencer, landings), never ``queue``.
"""
