"""``SealedWorld``: any World with its payloads sealed, for Worlds that do not seal their own stores.

The AWS World installs the sealing stores itself (``aws/world.py``: it always opens, and
seals new runs when a KMS key is configured); this wrapper gives the same to another
World (the memory World in tests, a World of one's own) over any key service.
"""

from __future__ import annotations

from world_aws.contract.sealing import PayloadSeal
from world_aws.contract.world import ForwardingWorld, World
from world_aws.sealing.run_keys import KeyService
from world_aws.sealing.stores import seal_stores


class SealedWorld(ForwardingWorld):
    """``inner`` with every payload sealed by ``service``'s data keys per run (``encrypting``: new runs)."""

    def __init__(self, inner: World, service: KeyService, *, encrypting: bool = True) -> None:
        super().__init__(inner)
        sealed = seal_stores(
            events=inner.events,
            runs=inner.runs,
            steps=inner.steps,
            hooks=inner.hooks,
            streams=inner.streams,
            service=service,
            encrypting=encrypting,
        )
        self.events, self.runs, self.steps = sealed.events, sealed.runs, sealed.steps
        self.hooks, self.streams = sealed.hooks, sealed.streams
        self.payloads: PayloadSeal = sealed.payloads
