"""The sealed form of one payload: AES-256-GCM under its run's data key, bound to run and field.

Two layouts, told apart by the version byte after ``SEALED_PREFIX``::

    v1  SEALED_PREFIX | 01 |                                      nonce (12) | ciphertext | tag (16)
    v2  SEALED_PREFIX | 02 | wrapped key length (2) | wrapped key | nonce (12) | ciphertext | tag (16)

Every payload is v1 (30 bytes more than its plaintext: a sequential step's two small
payloads ride in the run item's tail, whose write unit is shared with the next step's)
but a run's input, which is v2: it carries the run's data key wrapped by the customer
key, so the key is stored once, with the input (in its ``run_created`` event, and in
the first message), and never on the run item that each write of the run rewrites (a
byte there is billed on every write). A v1 payload opens with its run's key.

The associated data is the run id and the field's name (``input`` for a step's,
``run_input``, ``output``, ``error``, ``metadata``, ``payload``, ``stream:<name>``): a
payload moved to another run or another field does not open.

Nonces are random (96 bits): a run seals far fewer than the 2^32 payloads under which
NIST SP 800-38D bounds the collision risk of random nonces with one key.
"""

from __future__ import annotations

import hashlib
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from world_aws.contract.sealing import SEALED_OVERHEAD_BYTES, SEALED_PREFIX
from world_aws.errors import BadInput

KEY_ID_BYTES = 8
NONCE_BYTES = 12
TAG_BYTES = 16
_V1, _V2 = 1, 2
_V1_HEADER = len(SEALED_PREFIX) + 1
assert _V1_HEADER + NONCE_BYTES + TAG_BYTES == SEALED_OVERHEAD_BYTES


def key_id(wrapped: bytes) -> bytes:
    """The id of a data key in the caches: derived from its wrapped (public) form."""
    return hashlib.sha256(wrapped).digest()[:KEY_ID_BYTES]


def _aad(run_id: str, field: str) -> bytes:
    return b"world-aws/sealed/1\x00" + run_id.encode() + b"\x00" + field.encode()


def seal(key: bytes, run_id: str, field: str, data: bytes, *, carry: bytes | None = None) -> bytes:
    """``data`` sealed with ``key`` for ``field`` of run ``run_id``.

    ``carry``: the wrapped key, carried in the envelope (a run's input, v2).
    """
    nonce = os.urandom(NONCE_BYTES)
    if carry is None:
        header = SEALED_PREFIX + bytes([_V1])
    else:
        header = SEALED_PREFIX + bytes([_V2]) + len(carry).to_bytes(2, "big") + carry
    return header + nonce + AESGCM(key).encrypt(nonce, bytes(data), _aad(run_id, field))


def _parts(envelope: bytes) -> tuple[bytes | None, int]:
    """(the carried wrapped key or None, where the nonce starts).

    Raises:
        BadInput: truncated, or of an unknown version.
    """
    at = len(SEALED_PREFIX)
    version = envelope[at] if len(envelope) > at else 0
    if version == _V1 and len(envelope) >= SEALED_OVERHEAD_BYTES:
        return None, _V1_HEADER
    if version == _V2 and len(envelope) >= at + 3:
        size = int.from_bytes(envelope[at + 1 : at + 3], "big")
        start = at + 3 + size
        if len(envelope) >= start + NONCE_BYTES + TAG_BYTES:
            return bytes(envelope[at + 3 : start]), start
    raise BadInput(f"a sealed payload is truncated or of an unknown version ({len(envelope)} bytes)")


def carried_key(envelope: bytes) -> bytes | None:
    """The wrapped key ``envelope`` carries (a run's input), or None (it opens with its run's key).

    Raises:
        BadInput: not a whole envelope.
    """
    return _parts(bytes(envelope))[0]


def open_sealed(key: bytes, run_id: str, field: str, envelope: bytes) -> bytes:
    """The plaintext of ``envelope``.

    Raises:
        BadInput: it does not open with ``key`` for this run and field (tampered with,
            or moved from another run or field).
    """
    envelope = bytes(envelope)
    _, at = _parts(envelope)
    nonce = envelope[at : at + NONCE_BYTES]
    try:
        return AESGCM(key).decrypt(nonce, envelope[at + NONCE_BYTES :], _aad(run_id, field))
    except InvalidTag:
        raise BadInput(
            f"the sealed {field} of run {run_id} does not open with the run's key: "
            "it was altered, or moved from another run or field"
        ) from None
