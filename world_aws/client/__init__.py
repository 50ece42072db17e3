"""Starting and reading runs: what a caller of the World does.

Starting runs (idempotent starts, keys), run handles, lineage (children, cancel),
stream readers, forks and the schedule view; :class:`client.Client` gathers them. Import
rule: it imports ``errors``, ``contract``, ``serde``, ``workflow``, ``engine`` and
``observe``, never the worker. ``remote.py`` (``connect``) is the exception: a service's
client of a deployed stack over its signed HTTP API, on the CLI's HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from world_aws.client.remote import RemoteRun, ServiceClient, connect

# ``connect``: a service's client of a deployed stack over its HTTP API (``remote.py``), loaded
# on first use: it stands on the CLI's HTTP client, which the runtime's client layer never loads.
_REMOTE = ("RemoteRun", "ServiceClient", "connect")
__all__ = ["RemoteRun", "ServiceClient", "connect"]


def __getattr__(name: str) -> Any:
    if name in _REMOTE:
        from world_aws.client import remote

        return getattr(remote, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
