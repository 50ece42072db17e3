"""Test support shipped with world-aws: the World conformance suite, its factories and fixtures.

* :mod:`world_aws.testing.factories` - named World factories (``memory``, ``aws``).
* :mod:`world_aws.testing.plugin` - the ``world`` and ``clock`` pytest fixtures.
* :mod:`world_aws.testing.conformance` - one module of tests per area of the contract.
"""
