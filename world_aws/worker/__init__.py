"""Executing runs: what a queue consumer does with a delivery.

Continuations, inline and dispatched step execution, step bodies and their timeouts,
retries, outcomes, held runs, deployments, the reconciler and the scheduler;
:class:`worker.Worker` gathers them. Import rule: anything below it (``client`` too),
never the ``runtime`` façade, a World implementation or boto3.
"""
