"""Moved to :mod:`harness.sqs_pump` (shared with ``bench.chaos``); kept for existing imports."""

from harness.sqs_pump import SqsPump, aws_harness

__all__ = ["SqsPump", "aws_harness"]
