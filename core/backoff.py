"""Exponential backoff with jitter: the one delay schedule every retry loop uses.

The host's restart policy (:mod:`nodehost.daemon.restart`), the API client's
retries (:mod:`nodehost.api.client`) and the bootstrap plugin's certificate
renewals all wait ``initial * factor**(attempt-1)`` seconds before attempt
``attempt`` (1-based), at most ``maximum``, each delay spread by
+-``jitter`` (a fraction) so that many nodes do not retry in step; a draw above
``maximum`` is reflected below it (not clamped to it), so nodes that have all
reached the cap keep retrying at different times.
"""

from __future__ import annotations

from collections.abc import Callable

from nodehost.frozen import frozen

#: Past this many doublings every delay is ``maximum`` anyway; keeps the power finite.
_MAX_EXPONENT = 64


@frozen
class Backoff:
    """The delay schedule; :meth:`delay` is pure but for the random source."""

    initial: float
    maximum: float
    factor: float = 2.0
    jitter: float = 0.0

    def delay(self, attempt: int, rand: Callable[[], float] | None = None) -> float:
        """Seconds to wait before attempt ``attempt`` (1-based), never more than ``maximum``.

        ``rand`` draws the jitter in [0, 1) (default :func:`random.random`, imported on the
        first delay: a plan holds schedules without drawing from them).
        """
        if rand is None:
            import random

            rand = random.random
        exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
        base = min(self.maximum, self.initial * self.factor**exponent)
        spread = self.jitter * (2.0 * rand() - 1.0)
        delay = base * (1.0 + spread)
        if delay > self.maximum:  # reflected below the cap: clamping would put half the
            delay = 2.0 * self.maximum - delay  # draws on the cap itself, a fleet in step
        return max(0.0, delay)
