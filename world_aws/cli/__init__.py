"""The ``world-aws`` command line.

``world-aws run MODULE:APP WORKFLOW [--arg JSON]...`` runs a workflow to
completion on the embedded default (moto in-process on loopback, resources from
template.yaml), showing progress, then the result and the run's timeline.
``world-aws demo`` runs the bundled order-pipeline example (:mod:`world_aws.cli.run`).
Exit codes: 0 the run completed, 1 it failed, 2 bad arguments, 3 ``--timeout``
passed, 130 Ctrl-C.

``world-aws dev [MODULE:APP]`` serves an app on the embedded stack with its HTTP
API on 127.0.0.1 until Ctrl-C (:mod:`world_aws.cli.dev`). The operator commands
``start``, ``ls``, ``inspect``, ``cancel``, ``fork`` and ``resume`` talk to that API, or a
deployed one (:mod:`world_aws.cli.operate`); their ``--api URL`` and ``--sign``
may come before the command too. ``world-aws ui --api URL`` serves the web UI
on 127.0.0.1 for a deployed API, its requests signed (:mod:`world_aws.cli.ui`).

``world-aws export RUN_ID...`` writes runs' logs to a file and ``world-aws replay
MODULE:APP [FILE]`` replays them (or the API's runs) against local code: the replay
gate before a deploy (:mod:`world_aws.cli.replay`; exit 1 if a run diverges).

``world-aws init NAME`` makes a project of one's own, ``build`` its Lambda bundle and
``deploy`` runs sam on it (:mod:`world_aws.cli.project`).
"""
