"""The restart policy as a small state machine: failures in, delays and verdicts out.

Pure (the clock and the random source are arguments), so it is tested alone.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from nodehost.backoff import Backoff
from nodehost.daemon.settings import RestartPolicy
from nodehost.frozen import frozen


@frozen
class Verdict:
    """What to do after an exit: wait ``delay`` seconds and restart, or give up."""

    restart: bool
    delay: float
    consecutive_failures: int


class RestartTracker:
    """Counts one component's consecutive quick failures under a :class:`RestartPolicy`."""

    def __init__(self, policy: RestartPolicy, rand: Callable[[], float] = random.random) -> None:
        self.policy = policy
        self.rand = rand
        self.consecutive_failures = 0

    @property
    def crash_looping(self) -> bool:
        """True after two quick failures in a row: the visible crash-loop state."""
        return self.consecutive_failures >= 2

    def on_exit(self, run_seconds: float) -> Verdict:
        """Record an unrequested exit after a run of ``run_seconds``; say what to do."""
        if run_seconds >= self.policy.stable_period:
            self.consecutive_failures = 0
        self.consecutive_failures += 1
        limit = self.policy.crash_loop_limit
        if limit and self.consecutive_failures >= limit:
            return Verdict(False, 0.0, self.consecutive_failures)
        return Verdict(True, self.delay(self.consecutive_failures), self.consecutive_failures)

    def delay(self, failures: int) -> float:
        """The jittered backoff before restart number ``failures`` (1-based)."""
        policy = self.policy
        backoff = Backoff(policy.initial_backoff, policy.max_backoff, policy.factor, policy.jitter)
        return backoff.delay(failures, self.rand)
