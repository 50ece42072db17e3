"""The sealed form of one payload: AES-256-GCM under its run's data key, bound to run and field.

Layout (40 bytes more than the plaintext)::

    SEALED_MAGIC (4) | key id (8) | nonce (12) | ciphertext | GCM tag (16)

The key id (the first 8 bytes of the SHA-256 of the wrapped data key) tells a reader
which key sealed the payload without asking KMS. The associated data is the run id
and the field's name (``input``, ``output``, ``error``, ``metadata``, ``payload``,
``stream:<name>``): a payload moved to another run or another field does not open.

Nonces are random (96 bits): a run seals far fewer than the 2^32 payloads under which
NIST SP 800-38D bounds the collision risk of random nonces with one key.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from world_aws.contract.sealing import SEALED_MAGIC, SEALED_OVERHEAD_BYTES
from world_aws.errors import BadInput

KEY_ID_BYTES = 8
NONCE_BYTES = 12
HEADER_BYTES = len(SEALED_MAGIC) + KEY_ID_BYTES + NONCE_BYTES
OVERHEAD_BYTES = HEADER_BYTES + 16
assert OVERHEAD_BYTES == SEALED_OVERHEAD_BYTES


def key_id(wrapped: bytes) -> bytes:
    """The id of a data key in envelopes: derived from its wrapped (public) form."""
    return hashlib.sha256(wrapped).digest()[:KEY_ID_BYTES]


def _aad(run_id: str, field: str) -> bytes:
    return b"world-aws/sealed/1\x00" + run_id.encode() + b"\x00" + field.encode()


def seal(key: bytes, kid: bytes, run_id: str, field: str, data: bytes) -> bytes:
    """``data`` sealed with ``key`` (whose id is ``kid``) for ``field`` of run ``run_id``."""
    nonce = os.urandom(NONCE_BYTES)
    return SEALED_MAGIC + kid + nonce + AESGCM(key).encrypt(nonce, bytes(data), _aad(run_id, field))


def sealed_key_id(envelope: bytes) -> bytes:
    """The id of the key that sealed ``envelope``.

    Raises:
        BadInput: too short to be an envelope.
    """
    if len(envelope) < OVERHEAD_BYTES:
        raise BadInput(f"a sealed payload is truncated: {len(envelope)} bytes")
    return bytes(envelope[len(SEALED_MAGIC) : len(SEALED_MAGIC) + KEY_ID_BYTES])


def open_sealed(key: bytes, run_id: str, field: str, envelope: bytes) -> bytes:
    """The plaintext of ``envelope``.

    Raises:
        BadInput: it does not open with ``key`` for this run and field (tampered with,
            or moved from another run or field).
    """
    envelope = bytes(envelope)
    nonce = envelope[HEADER_BYTES - NONCE_BYTES : HEADER_BYTES]
    try:
        return AESGCM(key).decrypt(nonce, envelope[HEADER_BYTES:], _aad(run_id, field))
    except InvalidTag:
        raise BadInput(
            f"the sealed {field} of run {run_id} does not open with the run's key: "
            "it was altered, or moved from another run or field"
        ) from None
