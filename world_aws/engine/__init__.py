"""Replay: running a workflow function against its event log, with no I/O of its own.

The replay and its event loop, the non-determinism guard, operation ids, child and
continue-as-new links, the log and replay caches, the replay gate. Import rule: it
imports ``errors``, ``contract``, ``serde``, ``workflow`` and ``observe`` only.
"""
