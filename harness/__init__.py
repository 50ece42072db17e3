"""The project's internal test harness (not in the wheel): spies, fault plans, faulty Worlds, pumps.

Used by tests/ and bench/ from the repository root; users test their apps with
``world_aws.testing`` (the kit and the conformance suite), which ships.
"""
