"""Conformance: the admission store (``world.admission``): slots with leases and a line, rate windows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from world_aws.contract.admission import WAITER_STALE_SECONDS, Verdict
from world_aws.contract.clock import ManualClock
from world_aws.contract.world import World
from world_aws.errors import BadInput
from world_aws.testing.conformance.support import new_id


def _acquire(world: World, scope: str, holder: str, ticket: str = "", limit: int = 2, lease: float = 60.0):  # type: ignore[no-untyped-def]
    return world.admission.acquire(
        scope,
        holder=holder,
        ticket=ticket or f"m-{holder}",
        limit=limit,
        lease_seconds=lease,
        wake=holder.encode(),
    )


def test_slots_admit_up_to_the_limit_then_keep_a_line_in_arrival_order(world: World) -> None:
    scope = new_id("flow")
    # GIVEN two slots, taken by a and b
    assert _acquire(world, scope, "a").verdict is Verdict.GRANTED
    assert _acquire(world, scope, "b").verdict is Verdict.GRANTED
    # WHEN c and d ask THEN they wait, c first
    c, d = _acquire(world, scope, "c"), _acquire(world, scope, "d")
    assert (c.verdict, c.position, d.verdict, d.position) == (Verdict.WAITING, 0, Verdict.WAITING, 1)
    state = world.admission.slots(scope)
    assert [h.holder for h in state.holders] == ["a", "b"]
    assert [w.holder for w in state.waiters] == ["c", "d"]
    # AND d may not pass c while one slot is free: a release wakes c, and only c
    assert world.admission.release(scope, holder="a", ticket="m-a") == [b"c"]
    assert _acquire(world, scope, "d").verdict is Verdict.WAITING
    assert _acquire(world, scope, "c").verdict is Verdict.GRANTED
    assert [h.holder for h in world.admission.slots(scope).holders] == ["b", "c"]


def test_a_redelivery_renews_its_slot_and_another_copy_is_held_elsewhere(world: World) -> None:
    scope = new_id("flow")
    assert _acquire(world, scope, "a", ticket="m1", limit=1).verdict is Verdict.GRANTED
    # WHEN the same message comes again THEN it still holds; a copy under another message does not
    assert _acquire(world, scope, "a", ticket="m1", limit=1).verdict is Verdict.GRANTED
    assert _acquire(world, scope, "a", ticket="m2", limit=1).verdict is Verdict.HELD_ELSEWHERE
    # AND a release under the copy's ticket frees nothing
    world.admission.release(scope, holder="a", ticket="m2")
    assert [h.ticket for h in world.admission.slots(scope).holders] == ["m1"]


def test_a_slot_whose_holder_went_silent_frees_at_its_lease(world: World, clock: ManualClock) -> None:
    scope = new_id("flow")
    assert _acquire(world, scope, "a", limit=1, lease=10).verdict is Verdict.GRANTED
    assert _acquire(world, scope, "b", limit=1).verdict is Verdict.WAITING
    # WHEN the lease runs out without a release THEN the slot is b's
    clock.advance(10.5)
    assert world.admission.slots(scope).holders == ()
    assert _acquire(world, scope, "b", limit=1).verdict is Verdict.GRANTED


def test_a_waiter_not_seen_for_long_leaves_the_line(world: World, clock: ManualClock) -> None:
    scope = new_id("flow")
    _acquire(world, scope, "a", limit=1, lease=1000)
    _acquire(world, scope, "ghost", limit=1)
    clock.advance(WAITER_STALE_SECONDS + 1)
    # WHEN a newcomer asks after the ghost went silent THEN it is first in line
    assert _acquire(world, scope, "new", limit=1).position == 0
    assert [w.holder for w in world.admission.slots(scope).waiters] == ["new"]


def test_concurrent_acquires_never_admit_more_than_the_limit(world: World) -> None:
    scope = new_id("flow")
    with ThreadPoolExecutor(8) as pool:
        verdicts = list(pool.map(lambda i: _acquire(world, scope, f"h{i}", limit=3).verdict, range(16)))
    assert verdicts.count(Verdict.GRANTED) == 3
    assert len(world.admission.slots(scope).holders) == 3
    assert len(world.admission.slots(scope).waiters) == 13


def _take(world: World, scope: str, holder: str, limit: int = 2) -> object:
    return world.admission.take(scope, holder=holder, limit=limit, period_seconds=1)


def _settle(world: World, scope: str, holder: str, at: object) -> None:
    world.admission.settle(scope, holder=holder, started_at=at, period_seconds=1)  # type: ignore[arg-type]


def test_a_rate_window_admits_limit_starts_per_period(world: World, clock: ManualClock) -> None:
    scope = new_id("rate")
    start = clock.now()
    # GIVEN two tokens a second, both taken and settled at their start
    assert [_take(world, scope, "a"), _take(world, scope, "b")] == [None, None]
    _settle(world, scope, "a", start)
    _settle(world, scope, "b", start)
    # WHEN a third start comes within the second THEN it is told when the first token comes back
    assert _take(world, scope, "c") == start + timedelta(seconds=1)
    clock.advance(1.0)
    assert _take(world, scope, "c") is None
    assert [s.holder for s in world.admission.window(scope).starts] == ["c"]  # the others aged out


def test_an_unsettled_token_counts_until_settled_and_a_refused_claim_gives_it_back(
    world: World, clock: ManualClock
) -> None:
    scope = new_id("rate")
    # GIVEN a token taken and not settled (its attempt's claim not written yet)
    assert _take(world, scope, "a", limit=1) is None
    # WHEN a second passes THEN it still counts: b is reserved the token a period from now
    clock.advance(1.5)
    due = _take(world, scope, "b", limit=1)
    assert due == clock.now() + timedelta(seconds=1)
    # AND one of b is told its time again
    assert _take(world, scope, "b", limit=1) == due
    # AND a newcomer may not take the token a gives back (no attempt started): it is b's
    _settle(world, scope, "a", None)
    assert _take(world, scope, "c", limit=1) is not None
    clock.advance(1.0)
    assert _take(world, scope, "b", limit=1) is None
    # AND settled at its start, b's token counts one period from that start
    _settle(world, scope, "b", clock.now())
    states = {s.holder: s.state.value for s in world.admission.window(scope).starts}
    assert states == {"b": "settled", "c": "reserved"}


def test_a_redelivery_with_a_taken_token_counts_it_as_started_and_needs_another(
    world: World, clock: ManualClock
) -> None:
    scope = new_id("rate")
    # GIVEN a token taken by a delivery whose claim's answer was lost (its start not known)
    assert _take(world, scope, "a", limit=2) is None
    clock.advance(0.25)
    # WHEN its redelivery asks THEN the first token is settled now and a second one taken
    assert _take(world, scope, "a", limit=2) is None
    states = sorted(s.state.value for s in world.admission.window(scope).starts)
    assert states == ["settled", "taken"]
    # AND a third start within the period is refused
    assert _take(world, scope, "b", limit=2) is not None


def test_refused_starts_are_reserved_tokens_in_arrival_order(world: World, clock: ManualClock) -> None:
    scope = new_id("rate")
    start = clock.now()
    # GIVEN two tokens a second, both spent now
    for holder in ("a", "b"):
        assert _take(world, scope, holder) is None
        _settle(world, scope, holder, start)
    # WHEN five more ask THEN each is told a time, two per second, in the order they came
    dues = [_take(world, scope, h) for h in "cdefg"]
    seconds = [(d - start).total_seconds() for d in dues]  # type: ignore[operator]
    assert seconds == [1.0, 1.0, 2.0, 2.0, 3.0]
    # AND each is admitted at its time, before any newcomer
    clock.advance(1.0)
    assert [_take(world, scope, h) is None for h in "cd"] == [True, True]
    assert _take(world, scope, "late") is not None


def test_bad_limits_are_refused_by_name(world: World) -> None:
    for call in (
        lambda: world.admission.acquire("s", holder="a", ticket="t", limit=0, lease_seconds=1),
        lambda: world.admission.acquire("s", holder="a", ticket="t", limit=1, lease_seconds=0),
        lambda: world.admission.take("s", holder="a", limit=0, period_seconds=1),
    ):
        try:
            call()
        except BadInput as exc:
            assert "limit" in str(exc) or "lease" in str(exc)
        else:
            raise AssertionError("a bad limit was accepted")


def _run_acquire(world: World, scope: str, run_id: str, priority: int = 0, lease: float = 60.0):  # type: ignore[no-untyped-def]
    """A run's acquire (``worker/run_admission.py``): holder and ticket its id, the scope audited."""
    return world.admission.acquire(
        scope,
        holder=run_id,
        ticket=run_id,
        limit=1,
        lease_seconds=lease,
        wake=run_id.encode(),
        priority=priority,
        audit=True,
    )


def test_the_line_goes_by_priority_then_arrival(world: World) -> None:
    scope = new_id("flow")
    assert _run_acquire(world, scope, "holder").verdict is Verdict.GRANTED
    # WHEN runs join the line with priorities 0, 5, 0, 9, 5
    for run_id, priority in [("a", 0), ("b", 5), ("c", 0), ("d", 9), ("e", 5)]:
        assert _run_acquire(world, scope, run_id, priority).verdict is Verdict.WAITING
    # THEN the line is the highest first, first come first served within a priority
    state = world.admission.slots(scope)
    assert [w.holder for w in state.waiters] == ["d", "b", "e", "a", "c"]
    assert [w.priority for w in state.waiters] == [9, 5, 5, 0, 0]
    assert _run_acquire(world, scope, "b", 5).position == 1
    # AND a release wakes the first of the highest priority
    assert world.admission.release(scope, holder="holder") == [b"d"]


def test_an_audited_scope_keeps_a_lapsed_holder_and_names_it_until_renewed_or_released(
    world: World, clock: ManualClock
) -> None:
    scope = new_id("flow")
    assert _run_acquire(world, scope, "r1", lease=10).verdict is Verdict.GRANTED
    # WHEN its lease passes
    clock.advance(11)
    # THEN it still holds (an audited scope drops no holder on time alone), and a newcomer is told to check it
    assert [h.holder for h in world.admission.slots(scope).holders] == ["r1"]
    refused = _run_acquire(world, scope, "r2")
    assert (refused.verdict, refused.lapsed) == (Verdict.WAITING, ("r1",))
    # WHEN it is renewed THEN it is no longer named
    world.admission.renew(scope, holder="r1", lease_seconds=10)
    assert _run_acquire(world, scope, "r2").lapsed == ()
    assert world.admission.slots(scope).holders[0].expires_at > clock.now()
    # AND renewing one that holds nothing adds nothing; a release frees the slot for the line
    world.admission.renew(scope, holder="ghost", lease_seconds=10)
    assert [h.holder for h in world.admission.slots(scope).holders] == ["r1"]
    assert world.admission.release(scope, holder="r1") == [b"r2"]
    assert _run_acquire(world, scope, "r2").verdict is Verdict.GRANTED
