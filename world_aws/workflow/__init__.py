"""The authoring API: what workflow and step code is written with.

Registry and decorators, the in-workflow context (time, randomness, sleep, hooks),
typed hooks, streams, schedules, ``patched()`` and continue-as-new. Import rule: it
imports ``errors``, ``contract`` and ``serde`` only, never the engine, the worker, the
client or a World: the engine reaches it through :class:`context.WorkflowScope`.
"""
