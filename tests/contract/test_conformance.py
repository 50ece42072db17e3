"""Runs the World conformance suite (``world_aws.testing.conformance``) against every World factory.

Test ids name the World: ``test_duplicate_step_created_is_conflict[memory]``.
"""

from world_aws.testing.conformance import conformance_tests

globals().update(conformance_tests())
