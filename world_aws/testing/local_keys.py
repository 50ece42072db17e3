"""``LocalKeyService``: data keys wrapped by a master key held in memory, for Worlds without KMS.

The conformance suite runs the memory World sealed with it (``memory-sealed``), so the
sealing stores (``world_aws.sealing``) are checked against the same contract as every
World. Not for production: the master key lives and dies with the process.
"""

from __future__ import annotations

import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from world_aws.sealing import DataKey


class LocalKeyService:
    """AES-256 data keys, wrapped with AES-GCM under a fresh master key (the run id as associated data)."""

    def __init__(self) -> None:
        self._master = AESGCM(AESGCM.generate_key(bit_length=256))
        self.generated = 0
        self.unwrapped = 0

    def generate(self, run_id: str) -> DataKey:
        self.generated += 1
        key, nonce = os.urandom(32), os.urandom(12)
        return DataKey(key, nonce + self._master.encrypt(nonce, key, run_id.encode()))

    def unwrap(self, run_id: str, wrapped: bytes) -> bytes:
        self.unwrapped += 1
        return self._master.decrypt(wrapped[:12], wrapped[12:], run_id.encode())
