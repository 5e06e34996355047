"""How the host runs a plan: restart policy, health server, readiness and stop settings.

Plain frozen values built by the CLI from its flags; the defaults are the
documented behaviour of ``nodehost start``.
"""

from __future__ import annotations

from dataclasses import field

from nodehost.frozen import frozen

#: Default address of the health/metrics/status server (loopback only).
DEFAULT_HEALTH_HOST = "127.0.0.1"
DEFAULT_HEALTH_PORT = 10245
DEFAULT_HEALTH_ADDRESS = f"{DEFAULT_HEALTH_HOST}:{DEFAULT_HEALTH_PORT}"


@frozen
class RestartPolicy:
    """When and how often a component that exited on its own is started again.

    The n-th consecutive failure waits ``initial_backoff * factor**(n-1)``
    seconds (at most ``max_backoff``), each delay spread by +-``jitter``
    (a fraction).  A run that lasted ``stable_period`` seconds or more resets
    the count.  ``crash_loop_limit`` consecutive failures -- each run shorter
    than ``stable_period`` -- mark the component failed, which fails the node
    (nodehost stops everything and exits 1); ``0`` means never give up.
    """

    initial_backoff: float = 0.02
    factor: float = 2.0
    max_backoff: float = 30.0
    jitter: float = 0.2
    stable_period: float = 10.0
    crash_loop_limit: int = 5


@frozen
class HostSettings:
    """Everything :func:`nodehost.daemon.run_plan` needs besides the plan.

    ``health_address``  ``(host, port)`` of the health/metrics/status server, or
                        None for none; port 0 picks a free port (logged, and
                        written to ``<state-dir>/run/health.address``).
    ``exit_on_ready``   CI smoke mode: once every component is ready, print the
                        readiness summary, stop everything and return 0.
    ``ready_timeout``   seconds from start until every component must be ready,
                        else the node fails (exit 1); None waits for ever.
    ``notify``          talk to systemd through ``$NOTIFY_SOCKET`` when it is set.
    ``watchdog``        send ``WATCHDOG=1`` when ``$WATCHDOG_USEC`` asks for it.
    ``stop_grace``      overrides every component's own stop grace period.
    ``tail_lines``      how many of a component's last output lines are kept
                        for failure messages.
    ``log_output``      turn child stdout/stderr lines into log events.
    ``config_rollback_after`` seconds a new configuration has to make the
                        components it restarted ready, else it is rolled back.
    """

    restart: RestartPolicy = field(default_factory=RestartPolicy)
    health_address: tuple[str, int] | None = (DEFAULT_HEALTH_HOST, DEFAULT_HEALTH_PORT)
    exit_on_ready: bool = False
    ready_timeout: float | None = None
    notify: bool = True
    watchdog: bool = True
    stop_grace: float | None = None
    tail_lines: int = 20
    log_output: bool = True
    config_rollback_after: float = 120.0
