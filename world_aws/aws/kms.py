"""``KmsKeyService``: the runs' data keys, made and unwrapped by AWS KMS (README "Security").

``GenerateDataKey`` (AES_256) under the customer key makes a run's key; ``Decrypt``
unwraps it. Both carry the encryption context ``{"world-aws:run_id": <run id>}``, so a
wrapped key opens only for its own run, and CloudTrail names the run of every use.

KMS's own limits (https://docs.aws.amazon.com/kms/latest/developerguide/requests-per-second.html)
are shared per account and region: a throttled call is ``Throttled`` (the delivery
is tried again later), a refused ``Decrypt`` is ``KeyDenied`` (readers show the
payloads as encrypted), anything refused else is ``Misconfigured``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.aws.errors import ACCESS_DENIED_CODES, error_code, translate
from world_aws.errors import BadInput, Misconfigured, WorldAwsError
from world_aws.sealing import DataKey, KeyDenied

ENCRYPTION_CONTEXT_KEY = "world-aws:run_id"


class KmsKeyService:
    """Data keys from KMS. The client is made on first use (a reader of plain runs never needs one).

    Args:
        client: a boto3 KMS client, or a function that makes one.
        key_id: the customer key (id, ARN or alias) new runs' keys are made under; None:
            this process only unwraps.
    """

    def __init__(self, client: Any | Callable[[], Any], key_id: str | None) -> None:
        self._client = client
        self.key_id = key_id

    @property
    def client(self) -> Any:
        if callable(self._client) and not hasattr(self._client, "generate_data_key"):
            self._client = self._client()
        return self._client

    def generate(self, run_id: str) -> DataKey:
        if not self.key_id:
            raise Misconfigured("no KMS key is configured (WORKFLOW_KMS_KEY_ID) to encrypt new runs")
        try:
            answer = self.client.generate_data_key(
                KeyId=self.key_id, KeySpec="AES_256", EncryptionContext={ENCRYPTION_CONTEXT_KEY: run_id}
            )
        except (ClientError, BotoCoreError) as exc:
            raise _translated(exc, "KMS GenerateDataKey", self.key_id) from exc
        return DataKey(plaintext=bytes(answer["Plaintext"]), wrapped=bytes(answer["CiphertextBlob"]))

    def unwrap(self, run_id: str, wrapped: bytes) -> bytes:
        try:
            answer = self.client.decrypt(
                CiphertextBlob=wrapped, EncryptionContext={ENCRYPTION_CONTEXT_KEY: run_id}
            )
        except ClientError as exc:
            if error_code(exc) in ACCESS_DENIED_CODES:
                raise KeyDenied(
                    f"kms:Decrypt refused for run {run_id}'s data key: {error_code(exc)}",
                    resource="the run's KMS key",
                    operation="KMS Decrypt",
                ) from exc
            raise _translated(exc, "KMS Decrypt", "the run's KMS key") from exc
        except BotoCoreError as exc:
            raise _translated(exc, "KMS Decrypt", "the run's KMS key") from exc
        return bytes(answer["Plaintext"])


# The key is gone, disabled or pending deletion: the deployment must be fixed (not a short wait).
_KEY_STATE_CODES = frozenset({"NotFoundException", "DisabledException", "KMSInvalidStateException"})


def _translated(exc: Exception, operation: str, resource: str) -> WorldAwsError:
    code = error_code(exc) if isinstance(exc, ClientError) else ""
    if code == "InvalidCiphertextException":
        return BadInput(f"{operation}: a run's wrapped data key is not valid for it ({resource})")
    if code in _KEY_STATE_CODES:
        return Misconfigured(
            f"misconfigured: {resource} is unusable during {operation} ({code})",
            resource=resource,
            operation=operation,
        )
    return translate(exc, operation=operation, resource=resource)
