"""QueueSignals: a long poll of the embedded moto wakes for its own queue's sends, delays and a stop."""

from __future__ import annotations

import threading
import time

from world_aws.local.queue_signals import QueueSignals, WaitEnd

A = "http://127.0.0.1:1/123456789012/a"
B = "http://127.0.0.1:1/123456789012/b"
# Bounds the tests' waits when something is wrong; a passing test never reaches it.
LONG = 30.0


def _wait_in_thread(signals: QueueSignals, url: str, until: float) -> tuple[threading.Thread, list[WaitEnd]]:
    ended: list[WaitEnd] = []
    mark = signals.mark(url)
    thread = threading.Thread(target=lambda: ended.append(signals.wait(url, mark, until)))
    thread.start()
    return thread, ended


def test_a_send_to_the_queue_ends_its_wait() -> None:
    signals = QueueSignals()
    thread, ended = _wait_in_thread(signals, A, time.monotonic() + LONG)
    signals.record("AmazonSQS.SendMessage", {"QueueUrl": A, "MessageBody": "x"})
    thread.join(LONG)
    assert ended == [WaitEnd.SENT]


def test_a_send_before_the_wait_but_after_the_mark_still_counts() -> None:
    # GIVEN a mark taken before a short poll, and a send while that poll ran
    signals = QueueSignals()
    mark = signals.mark(A)
    signals.record("AmazonSQS.SendMessageBatch", {"QueueUrl": A, "Entries": [{"Id": "1"}, {"Id": "2"}]})
    # WHEN the poller then waits THEN it does not wait at all
    assert signals.wait(A, mark, time.monotonic() + LONG) is WaitEnd.SENT


def test_a_send_to_another_queue_or_a_read_leaves_the_wait_to_its_timeout() -> None:
    signals = QueueSignals()
    mark = signals.mark(A)
    signals.record("AmazonSQS.SendMessage", {"QueueUrl": B})
    signals.record("AmazonSQS.GetQueueAttributes", {"QueueUrl": A})
    signals.record("AmazonSQS.SendMessage", {"MessageBody": "no queue url"})
    assert signals.wait(A, mark, time.monotonic() + 0.05) is WaitEnd.TIMEOUT


def test_a_delayed_send_ends_the_wait_when_its_delay_is_over() -> None:
    # GIVEN a waiter, then a message sent with a (short) delay and a batch with another
    signals = QueueSignals()
    thread, ended = _wait_in_thread(signals, A, time.monotonic() + LONG)
    signals.record("AmazonSQS.SendMessage", {"QueueUrl": A, "DelaySeconds": 0.05})
    # THEN the waiter wakes for the delay, not for the send
    thread.join(LONG)
    assert ended == [WaitEnd.DUE]
    # AND a batch whose entries are all delayed does not count as a send either
    mark = signals.mark(A)
    signals.record(
        "AmazonSQS.SendMessageBatch",
        {"QueueUrl": A, "Entries": [{"Id": "1", "DelaySeconds": 0.05}, {"Id": "2", "DelaySeconds": 900}]},
    )
    assert signals.wait(A, mark, time.monotonic() + LONG) is WaitEnd.DUE


def test_a_visibility_change_ends_the_wait_now_or_when_it_runs_out() -> None:
    signals = QueueSignals()
    mark = signals.mark(A)
    signals.record("AmazonSQS.ChangeMessageVisibility", {"QueueUrl": A, "VisibilityTimeout": 0})
    assert signals.wait(A, mark, time.monotonic() + LONG) is WaitEnd.SENT
    mark = signals.mark(A)
    signals.record(
        "AmazonSQS.ChangeMessageVisibilityBatch",
        {"QueueUrl": A, "Entries": [{"Id": "1", "VisibilityTimeout": 0.05}]},
    )
    assert signals.wait(A, mark, time.monotonic() + LONG) is WaitEnd.DUE


def test_release_ends_every_wait_now_and_later_ones_at_once() -> None:
    signals = QueueSignals()
    waiting = [_wait_in_thread(signals, url, time.monotonic() + LONG) for url in (A, B)]
    signals.release()
    for thread, ended in waiting:
        thread.join(LONG)
        assert ended == [WaitEnd.RELEASED]
    assert signals.wait(A, signals.mark(A), time.monotonic() + LONG) is WaitEnd.RELEASED
