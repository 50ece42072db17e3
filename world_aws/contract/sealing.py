"""Payload sealing: the seam through which a World encrypts the payloads it stores and sends.

A World may seal (encrypt) every payload of a run with that run's data key
(README "Security", ``world_aws/sealing``). Its stores then seal what they are
given and open what they return, so the runtime reads and writes plaintext as
before. Two things the runtime itself sends outside the stores go through
``world.payloads`` first:

* a new run's creation (:meth:`PayloadSeal.creation`): the run gets its data key and
  its input is sealed, carrying the wrapped key, before ``run_created`` and the first
  message (which carries the same creation) are written in parallel;
* a step message's ``step_input`` (:meth:`PayloadSeal.seal`), inline or in blob
  storage above 128 KiB (contract §5.2).

A sealed payload is an envelope that starts with :data:`SEALED_PREFIX`; a store
given a payload already sealed for its run and field (a step input a consumer
re-ensures from its message) stores it as it is. A payload a reader cannot open
(no ``kms:Decrypt``) is returned sealed: the serializer then refuses it with
``PayloadEncrypted``, and the API, CLI and UI show ``<encrypted>`` in its place.
"""

from __future__ import annotations

from typing import Protocol

from world_aws.contract.records import RunCreation
from world_aws.errors import PayloadEncrypted

# 0xFF is CBOR's "break", never the first byte of a serialized value (runtime/serde.py):
# a sealed payload cannot be mistaken for a plain one. A version byte follows.
SEALED_PREFIX = b"\xff"
SEALED_VERSIONS = (1, 2)  # sealing/envelope.py: v1 a payload, v2 a run's input carrying its key
# A sealed payload's size beyond its plaintext (prefix, version, nonce, GCM tag:
# sealing/envelope.py); a run's input also carries its wrapped data key.
SEALED_OVERHEAD_BYTES = 30
# What the API, the CLI and the UI show for a payload they cannot decrypt.
ENCRYPTED_MARKER = "<encrypted>"


def is_sealed(data: object) -> bool:
    """Whether ``data`` is a sealed envelope (not a plain serialized value, nor anything but bytes)."""
    if not isinstance(data, bytes | bytearray | memoryview) or len(data) <= len(SEALED_PREFIX):
        return False
    return bytes(data[: len(SEALED_PREFIX)]) == SEALED_PREFIX and data[len(SEALED_PREFIX)] in SEALED_VERSIONS


def refuse_sealed(data: bytes, context: str) -> None:
    """Raise ``PayloadEncrypted`` if ``data`` is a sealed envelope this process could not open.

    A serializer calls it first: a World returns a payload sealed only when it cannot open it.
    """
    if is_sealed(data):
        raise PayloadEncrypted(
            f"cannot deserialize {context}: it is encrypted with its run's data key and this process "
            "cannot decrypt it (it needs kms:Decrypt on the run's key)"
        )


class PayloadSeal(Protocol):
    def seal(self, run_id: str, field: str, data: bytes) -> bytes:
        """``data`` sealed for ``field`` of run ``run_id``; ``data`` as it is when the run is not sealed.

        Raises:
            Throttled, Transient: the key service could not answer now.
            Misconfigured: the key service refused (no ``kms:Decrypt`` on the run's key).
        """
        ...

    def creation(self, run_id: str, creation: RunCreation) -> RunCreation:
        """``creation`` with a new data key for the run and its input sealed; as it is when off.

        Raises:
            Throttled, Transient, Misconfigured: as :meth:`seal`.
        """
        ...


class PlainPayloads:
    """The seal of a World that does not encrypt: every payload as it is."""

    def seal(self, run_id: str, field: str, data: bytes) -> bytes:
        return data

    def creation(self, run_id: str, creation: RunCreation) -> RunCreation:
        return creation


PLAIN_PAYLOADS: PayloadSeal = PlainPayloads()
