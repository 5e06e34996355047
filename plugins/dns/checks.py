"""The node DNS server's host check (``nodehost_checks``): ``dns.port-<n>``.

Its ``dnsBindAddress`` must be free for both UDP and TCP (TCP's holder is
named; UDP is tried with a bind that is closed at once -- without root a
port below 1024 cannot be tried and says so).
"""

from __future__ import annotations

from nodehost.check import Check, CheckContext

NAME = "dns"


def dns_checks(context: CheckContext) -> list[Check]:
    """The port check, for the selected, active DNS server (the hook asks only then)."""
    from nodehost.check.ports import port_check
    from nodehost.plugins.dns.settings import bind_address

    host, port = bind_address(context.config.dns_bind_address)
    return [port_check(f"{NAME}.port-{port}", host or "0.0.0.0", port, udp=True)] if port else []
