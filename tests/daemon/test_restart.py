"""The restart policy: exponential backoff with jitter, reset after a stable run, a crash-loop limit."""

from __future__ import annotations

import dataclasses

import pytest

from nodehost.daemon.restart import RestartTracker, Verdict
from nodehost.daemon.settings import RestartPolicy

POLICY = RestartPolicy(
    initial_backoff=0.1,
    factor=2.0,
    max_backoff=1.0,
    jitter=0.2,
    stable_period=10.0,
    crash_loop_limit=5,
)


def middle() -> float:
    return 0.5  # the random source at the centre: no jitter


def test_delays_double_from_the_initial_backoff_up_to_the_maximum() -> None:
    tracker = RestartTracker(POLICY, middle)
    delays = [tracker.on_exit(0.1).delay for _ in range(4)]
    assert delays == [0.1, 0.2, 0.4, 0.8]
    tracker = RestartTracker(
        RestartPolicy(initial_backoff=0.4, max_backoff=1.0, crash_loop_limit=0)
    )
    assert max(tracker.on_exit(0.1).delay for _ in range(10)) <= 1.0


def test_jitter_spreads_each_delay_within_its_fraction() -> None:
    low = RestartTracker(POLICY, lambda: 0.0).on_exit(0.1).delay
    high = RestartTracker(POLICY, lambda: 0.999999).on_exit(0.1).delay
    assert round(low, 6) == 0.08
    assert 0.1 < high < 0.12 + 1e-9


def test_the_limit_of_quick_failures_gives_up() -> None:
    tracker = RestartTracker(POLICY, middle)
    verdicts = [tracker.on_exit(0.5) for _ in range(5)]
    assert [v.restart for v in verdicts] == [True, True, True, True, False]
    assert verdicts[-1].consecutive_failures == 5


def test_a_stable_run_resets_the_count_and_the_backoff() -> None:
    tracker = RestartTracker(POLICY, middle)
    for _ in range(4):
        tracker.on_exit(0.5)
    verdict = tracker.on_exit(10.0)
    assert verdict.restart and verdict.consecutive_failures == 1 and verdict.delay == 0.1


def test_limit_zero_never_gives_up() -> None:
    tracker = RestartTracker(RestartPolicy(crash_loop_limit=0), middle)
    assert all(tracker.on_exit(0.0).restart for _ in range(100))


def test_crash_looping_is_visible_from_the_second_quick_failure() -> None:
    tracker = RestartTracker(POLICY, middle)
    tracker.on_exit(0.1)
    assert not tracker.crash_looping
    tracker.on_exit(0.1)
    assert tracker.crash_looping


def test_giving_up_waits_for_nothing() -> None:
    tracker = RestartTracker(RestartPolicy(crash_loop_limit=1), middle)
    assert tracker.on_exit(0.0) == Verdict(restart=False, delay=0.0, consecutive_failures=1)


def test_a_verdict_cannot_be_changed_after_it_is_given() -> None:
    verdict = RestartTracker(POLICY, middle).on_exit(0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.restart = False  # type: ignore[misc]
