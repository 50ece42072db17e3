"""Issue 42 item 5: retention erases an expired run's data, and nothing a live run needs (both Worlds).

On the AWS World the state is read back from moto: the table's items under the run's
partition and the bucket's objects.
"""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from harness.harness import Harness
from world_aws import Workflows, create_hook
from world_aws.aws.codec import keys
from world_aws.aws.s3 import blob_key
from world_aws.aws.world import AwsWorld
from world_aws.contract.erasure import RETENTION_ATTRIBUTE
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput, NotFound
from world_aws.worker.reconciler import Reconciler
from world_aws.workflow.retention import retention_seconds

BIG = 200 * 1024  # over the 128 KiB inline limit: in blob storage (contract §7.3)
HOUR = 3600


def _data(seed: int) -> bytes:
    """Incompressible bytes (compression would keep them inline)."""
    return random.Random(seed).randbytes(BIG)


def retention_app() -> Workflows:
    app = Workflows(retention="1h")

    @app.step
    def reverse(data: bytes) -> bytes:
        return data[::-1]

    @app.workflow
    async def keep(data: bytes) -> bytes:
        return await reverse(data)  # a big output only this run refers to

    @app.workflow
    async def waiter(data: bytes) -> int:
        await create_hook(token="retention:go")
        return len(await reverse(data))

    @app.workflow(retention="forever")
    async def archive(data: bytes) -> int:
        return len(data)

    return app


def _aws(h: Harness) -> AwsWorld | None:
    world: Any = h.world
    return cast(AwsWorld, world) if isinstance(world, AwsWorld) else None


def _partition(world: AwsWorld, run_id: str) -> list[dict[str, Any]]:
    return list(world.table.query_all("pk = :pk", {":pk": keys.run_pk(run_id)}))


def _blobs_of(world: AwsWorld, run_id: str) -> set[str]:
    """The digests of the blobs a run's items refer to (its ``blob#`` markers)."""
    prefix = keys.BLOB_PREFIX
    return {
        str(i[keys.SK]).removeprefix(prefix)
        for i in _partition(world, run_id)
        if str(i[keys.SK]).startswith(prefix)
    }


def _objects(world: AwsWorld) -> set[str]:
    listed = world.clients.s3.list_objects_v2(Bucket=world.config.bucket_name)
    return {str(o["Key"]) for o in listed.get("Contents", [])}


def test_retention_erases_an_expired_run_and_nothing_a_live_run_needs(harness: Harness) -> None:
    # GIVEN an app keeping ended runs an hour; a run that ended and a live one sharing its input
    h = harness
    runtime = h.runtime_for(retention_app())
    shared = _data(1)
    ended = runtime.start("keep", shared)
    assert h.settle(ended) is RunStatus.COMPLETED
    live = runtime.start("waiter", shared)
    h.settle()
    assert h.status(live.run_id) is RunStatus.RUNNING
    forever = runtime.start("archive", _data(2))
    assert h.settle(forever) is RunStatus.COMPLETED
    assert h.world.runs.get(ended.run_id).attributes[RETENTION_ATTRIBUTE] == str(HOUR)
    aws = _aws(h)
    if aws is not None:
        assert len(_partition(aws, ended.run_id)) > 3
        shared_blobs = _blobs_of(aws, ended.run_id) & _blobs_of(aws, live.run_id)
        own_blobs = _blobs_of(aws, ended.run_id) - shared_blobs
        assert shared_blobs and own_blobs  # the input; the output (and the step's input and output)
        assert {blob_key(d) for d in shared_blobs | own_blobs} <= _objects(aws)

    # WHEN less than the retention has passed, a tick erases nothing
    h.clock.advance(HOUR - 60)
    assert Reconciler(h.world).tick().erased == []
    # AND once it has passed, the tick erases the ended run
    h.clock.advance(120)
    report = Reconciler(h.world).tick()

    # THEN the expired run is gone, only its tombstone left
    assert report.erased == [ended.run_id]
    with pytest.raises(NotFound):
        h.world.runs.get(ended.run_id)
    assert h.world.events.list(ended.run_id) == []
    if aws is not None:
        left = _partition(aws, ended.run_id)
        assert [item[keys.SK] for item in left] == [keys.RUN_SK]
        assert keys.ERASED_AT in left[0] and keys.TTL_ATTRIBUTE in left[0]
        assert set(left[0]) <= {keys.PK, keys.SK, "status", keys.ERASED_AT, keys.TTL_ATTRIBUTE}
        # the objects only it referred to went; the input the live run shares stayed
        assert not {blob_key(d) for d in own_blobs} & _objects(aws)
        assert {blob_key(d) for d in shared_blobs} <= _objects(aws)
    # AND the run kept forever and the live run are untouched
    assert h.status(forever.run_id) is RunStatus.COMPLETED
    assert RETENTION_ATTRIBUTE not in h.world.runs.get(forever.run_id).attributes
    # AND the live run, resumed, reads its input and completes
    runtime.resume_hook("retention:go", None)
    assert h.settle(live) is RunStatus.COMPLETED
    assert live.result(timeout=0) == BIG
    # AND a later tick does not erase it before its own hour has passed
    assert Reconciler(h.world).tick().erased == []
    h.clock.advance(HOUR + 1)
    assert Reconciler(h.world).tick().erased == [live.run_id]
    if aws is not None:
        assert not {blob_key(d) for d in shared_blobs} & _objects(aws)  # its last referrer gone


def test_a_workflows_retention_wins_over_the_apps(harness: Harness) -> None:
    app = Workflows(retention="30d")

    @app.workflow(retention="2h")
    async def brief() -> str:
        return "done"

    @app.workflow
    async def usual() -> str:
        return "done"

    runtime = harness.runtime_for(app)
    short, default = runtime.start("brief"), runtime.start("usual")
    harness.settle(short)
    harness.settle(default)
    assert harness.world.runs.get(short.run_id).attributes[RETENTION_ATTRIBUTE] == str(2 * HOUR)
    assert harness.world.runs.get(default.run_id).attributes[RETENTION_ATTRIBUTE] == str(30 * 86400)


@pytest.mark.parametrize(
    ("given", "seconds"),
    [("30d", 30 * 86400), ("12h", 12 * HOUR), ("90m", 5400), ("45s", 45), ("2w", 14 * 86400), (60, 60)],
)
def test_retention_settings_are_read_as_seconds(given: str | int, seconds: int) -> None:
    assert retention_seconds(given) == seconds


@pytest.mark.parametrize("bad", ["30 days", "0d", "-1d", "1y", "", 0, 1.5])
def test_a_malformed_retention_is_refused_naming_it(bad: object) -> None:
    with pytest.raises(BadInput, match="retention"):
        Workflows(retention=bad)  # type: ignore[arg-type]
