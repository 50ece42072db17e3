"""Moved to :mod:`world_aws.testing.sqs_pump` (shared with ``bench.chaos``); kept for existing imports."""

from world_aws.testing.sqs_pump import SqsPump, aws_harness

__all__ = ["SqsPump", "aws_harness"]
