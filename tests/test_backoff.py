"""The shared backoff schedule: doubling from ``initial``, capped, spread by the jitter fraction."""

from __future__ import annotations

from nodehost.backoff import Backoff


def test_delays_grow_by_the_factor_from_the_first_attempt_up_to_the_maximum() -> None:
    backoff = Backoff(initial=2.0, maximum=256.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 8, 9, 10_000)] == [2, 4, 8, 256, 256, 256]


def test_jitter_spreads_a_delay_both_ways_but_never_past_the_maximum() -> None:
    backoff = Backoff(initial=1.0, maximum=3.0, jitter=0.25)
    assert backoff.delay(2, rand=lambda: 0.0) == 1.5
    assert backoff.delay(2, rand=lambda: 1.0) == 2.5
    assert backoff.delay(3, rand=lambda: 1.0) == 2.25  # 3.75 reflected below the cap


def test_delays_at_the_cap_stay_spread_instead_of_piling_up_on_it() -> None:
    """Clamping would send every draw above the cap to the cap: a fleet retrying in step."""
    backoff = Backoff(initial=0.5, maximum=8.0, jitter=0.25)
    draws = [backoff.delay(20, rand=lambda r=r: r / 100) for r in range(101)]
    assert max(draws) <= 8.0 and min(draws) >= 6.0
    assert draws.count(8.0) <= 1
