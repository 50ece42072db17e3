"""The chaos driver, beside the fault tests: a workload using every feature under seeded faults.

``run`` (configurations and the ``python -m bench.chaos`` CLI), ``workload`` (the app and
its expected results), ``driver`` (the pump, clock and caller of a run), ``checks`` and
``children`` (the invariants), ``aws`` (faults by botocore hooks on moto) and
``crash_points`` / ``crash_points_aws`` (one fault at every call of a reference run).
``bench/chaos.py``, ``bench/crash_points.py`` and ``bench/crash_points_aws.py`` are their
command lines; ``tests/faults`` runs the same code at a small size.
"""
