"""``EmbeddedAws``: moto's server in-process on loopback, provisioned from ``template.yaml``.

The embedded default of world-aws: no Docker, no AWS account, no network. It
starts moto's server on ``127.0.0.1`` (never ``0.0.0.0``: nothing outside this
machine may reach it) on a free port (``LoopbackMotoServer``), which serialises
request handling with one lock (``SerializedApp``: moto's conditional writes are
not atomic otherwise), builds boto3 clients with fake credentials, and creates the
template's table, queues and bucket with ``world_aws.aws.infra.provision``.
``moto_speedups`` keeps moto's DynamoDB cost per request independent of how much a
session has stored.

moto is imported here (in ``moto_server``, in ``moto_speedups``, and in ``moto_state``, which
reads its state for ``world-aws dev --state``) and nowhere else in the package: it is only in
the ``local``/``dev`` extras. moto's state is process-wide and outlives a server:
two ``EmbeddedAws`` alive at once share it (give them distinct ``name_prefix``
values), and ``stop()`` deletes the resources this instance provisioned, so the
next one can use the same names.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from world_aws.aws.clients import AwsClients
from world_aws.aws.infra.provision import ProvisionedResources, provision
from world_aws.aws.infra.template import DEFAULT_TEMPLATE
from world_aws.aws.local_clients import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY, clients_for_endpoint
from world_aws.local import moto_range, moto_speedups
from world_aws.local.moto_server import LoopbackMotoServer

DEFAULT_REGION = "us-east-1"


class EmbeddedAws:
    """A provisioned, serialised moto server in this process. Usable as a context manager.

    Args:
        region: the region the endpoint plays.
        name_prefix: prefix of every created resource name.
        template_path: the SAM template to provision from.
        parameters: template parameter overrides (e.g. ``{"DeploymentId": "dpl_1"}``).
        apply_settings: also apply the settings moto stores but never acts on (table
            PITR and TTL, bucket encryption, lifecycle, ...; ``provision``'s option).
        listen_fd: serve on this loopback socket, already listening, instead of a new one.
    """

    def __init__(
        self,
        *,
        region: str = DEFAULT_REGION,
        name_prefix: str = "world-aws",
        template_path: Path | str = DEFAULT_TEMPLATE,
        parameters: Mapping[str, str] | None = None,
        apply_settings: bool = True,
        listen_fd: int | None = None,
    ) -> None:
        # werkzeug logs one line per request at INFO; verbose=False does not stop it.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.region = region
        self._template_path = template_path
        self._apply_settings = apply_settings
        moto_range.warn_if_untested()
        # moto's DynamoDB otherwise slows down with every item a session adds (moto_speedups).
        moto_speedups.install()
        self._server = LoopbackMotoServer(listen_fd=listen_fd)
        self.app = self._server.app
        self.endpoint_url = self._server.endpoint_url
        try:
            self.clients = clients_for_endpoint(self.endpoint_url, region)
            self._provisioned: list[ProvisionedResources] = []
            self.resources: ProvisionedResources = self.provision(name_prefix, parameters=parameters)
        except BaseException:
            self._server.stop()
            raise
        self._stopped = False

    def env(self) -> dict[str, str]:
        """Environment variables for a process that should use this endpoint and its resources."""
        return {
            **self.resources.to_env(),
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_ACCESS_KEY,
        }

    def provision(
        self, name_prefix: str, *, parameters: Mapping[str, str] | None = None
    ) -> ProvisionedResources:
        """Create another copy of the template's resources on this endpoint (e.g. one per test).

        It is deleted with the rest by :meth:`stop`.
        """
        created = provision(
            self.clients,
            self._template_path,
            name_prefix=name_prefix,
            parameters=parameters,
            apply_settings=self._apply_settings,
        )
        self._provisioned.append(created)
        return created

    def stop(self) -> None:
        """Delete what this instance provisioned, stop the server, close the clients. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self.app.release_long_polls()  # a poller still waiting is answered now, not at its timeout
        try:
            for resources in self._provisioned:
                delete_provisioned(self.clients, resources)
        finally:
            self.clients.close()
            self._server.stop()

    def __enter__(self) -> EmbeddedAws:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def delete_provisioned(clients: AwsClients, resources: ProvisionedResources) -> None:
    """Delete one provisioned copy: queues, table (deletion protection off first), bucket and objects.

    moto keeps state after its server stops, so every local copy is deleted when done.
    """
    for url in {settings.url for settings in resources.queues.values()} | {
        settings.dlq_url for settings in resources.queues.values()
    }:
        clients.sqs.delete_queue(QueueUrl=url)
    # The template turns deletion protection on; this copy is a local one the embedded stack owns.
    clients.dynamodb.update_table(TableName=resources.table_name, DeletionProtectionEnabled=False)
    clients.dynamodb.delete_table(TableName=resources.table_name)
    paginator = clients.s3.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=resources.bucket_name):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            clients.s3.delete_objects(Bucket=resources.bucket_name, Delete={"Objects": keys})  # type: ignore[typeddict-item]
    clients.s3.delete_bucket(Bucket=resources.bucket_name)
