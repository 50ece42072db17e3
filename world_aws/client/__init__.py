"""Starting and reading runs: what a caller of the World does.

Starting runs (idempotent starts, keys), run handles, lineage (children, cancel),
stream readers, forks and the schedule view; :class:`client.Client` gathers them. Import
rule: it imports ``errors``, ``contract``, ``serde``, ``workflow``, ``engine`` and
``observe``, never the worker.
"""
