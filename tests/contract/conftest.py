"""Fixtures of the World conformance suite: ``world`` (parametrised over every World) and ``clock``."""

from world_aws.testing.plugin import clock, race_iterations, world

__all__ = ["clock", "race_iterations", "world"]
