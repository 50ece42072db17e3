"""The World on DynamoDB, SQS and S3: the only package that imports boto3.

``codec/`` (records to items), ``write/`` (each event's plan and writer, the sequencer and
fence), ``read/`` (entity stores, the log reader), ``queue/`` (SQS, the heartbeat, Lambda's
SQS batches); ``world.py`` composes them into ``AwsWorld``, ``event_store.py`` the event store
(the write path plus the log reads).
"""
