"""Which registered workflows another workflow's code calls as a child (``GET /workflows``' ``called_by``).

Read from the code, not from runs: each workflow function's code objects (its nested
functions and comprehensions included) name globals, and a global that is a workflow of the
same app is a child call. It cannot see a workflow reached another way (an attribute of a
module, a workflow passed as an argument), so it only ever says "a child of X", never "not a
child". The web UI uses it to start a top-level workflow by default and to mark children.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import CodeType
from typing import Any

from world_aws.workflow.registry import WorkflowFunction, Workflows


def callers(app: Workflows) -> dict[str, list[str]]:
    """For each workflow of ``app``, the names of the app's workflows whose code calls it, sorted."""
    found: dict[str, set[str]] = {name: set() for name in app.workflow_names}
    for name in app.workflow_names:
        workflow = app.get_workflow(name)
        fn: Any = workflow.fn
        namespace = getattr(fn, "__globals__", {})
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        for global_name in _names(code):
            value = namespace.get(global_name)
            if isinstance(value, WorkflowFunction) and value.name in found and value.name != name:
                found[value.name].add(name)
    return {name: sorted(by) for name, by in found.items()}


def _names(code: CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)
