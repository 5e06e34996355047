"""kube-proxy's stand-in: the real kube-proxy's command line, config file and ``/healthz``.

The console script ``nodehost-standin-kube-proxy`` (also ``python -m
nodehost.plugins.proxy.standin ARGS``) behaves as a current kube-proxy does
at the boundary nodehost touches, using the plugin's tables
(:mod:`nodehost.plugins.proxy.flags`, :mod:`nodehost.plugins.proxy.configfile`):

* the command line is parsed with kube-proxy's flag set; an unknown flag or a
  bad value prints ``Error: unknown flag: --foo`` and exits 1; a positional
  argument is refused as kube-proxy refuses it;
* ``--config FILE`` is read and checked (apiVersion, kind, known fields at the
  top and inside the structures the flags reach, value types, a supported
  ``mode``); a missing or wrong file prints ``Error: failed complete: FILE:
  ...`` and exits 1.  With a config file kube-proxy ignores the flags that map
  to its fields, and so does its stand-in; without one, ``--proxy-mode`` must
  name a mode a current kube-proxy has (``userspace`` is gone);
* ``/healthz`` is served on ``healthzBindAddress`` (default ``0.0.0.0:10256``;
  without ``--config``, from ``--healthz-bind-address``/``--healthz-port``,
  port 0 meaning none);
* ``--cleanup`` exits 0 at once (the stand-in made no rules);
* SIGTERM exits 0; the ``NODEHOST_STANDIN_[KUBE_PROXY_]*`` variables of
  :mod:`nodehost.testing.standin` make it crash, hang on stop, ignore
  SIGTERM, fork a grandchild or be slow to become ready.

The generic part (flags, config file, help, version, errors) is
:class:`nodehost.testing.fakeprogram.FakeProgram`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from nodehost.config.hostport import join_host_port, parse_ip
from nodehost.flagsline import go_quote
from nodehost.kube.values import Value
from nodehost.plugins.proxy.configfile import (
    KUBE_PROXY_CONFIG_KIND,
    KUBE_PROXY_HEALTHZ_BIND_ADDRESS,
    KUBE_PROXY_HEALTHZ_PORT,
    PROXY_MODES,
    check_kube_proxy_configuration,
    kube_proxy_healthz_address,
)
from nodehost.plugins.proxy.flags import KUBE_PROXY, KUBE_PROXY_FLAGS
from nodehost.testing.fakeprogram import FakeProgram
from nodehost.testing.standin import run_standin

PROGRAM = FakeProgram(
    name=KUBE_PROXY,
    flags=KUBE_PROXY_FLAGS,
    flag_error="{error}",
    config_error="failed complete: {path}: {error}",
    extra_arguments=lambda args: (
        f'"kube-proxy" does not take any arguments, got [{" ".join(map(go_quote, args))}]'
    ),
    check=check_kube_proxy_configuration,
)


def kube_proxy_flags_healthz_address(flags: Mapping[str, Value]) -> tuple[str, int] | None:
    """``/healthz`` from flags alone (no ``--config``): kube-proxy's deprecated-port rule.

    ``--healthz-port=0`` turns the server off; another port is appended to an
    address that has none.
    """
    address = KUBE_PROXY_HEALTHZ_BIND_ADDRESS
    if "healthz-bind-address" in flags:
        address = flags["healthz-bind-address"].config()
    port = flags["healthz-port"].config() if "healthz-port" in flags else KUBE_PROXY_HEALTHZ_PORT
    if port == 0 or not address:
        return None
    if parse_ip(address) is not None:
        address = join_host_port(address, port)
    bind = flags["bind-address"].config() if "bind-address" in flags else ""
    return kube_proxy_healthz_address(address, bind)


def kube_proxy_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kube-proxy`` console script."""
    parsed = PROGRAM.parse(sys.argv[1:] if argv is None else argv)
    cleanup = parsed.values.get("cleanup")
    if cleanup is not None and cleanup.config() != "false":
        # The real one removes its iptables, IPVS and nftables rules and exits; a stand-in
        # made none.
        print("kube-proxy: --cleanup: the stand-in made no rules, none to remove", flush=True)
        raise SystemExit(0)
    config = parsed.values.get("config")
    if config is not None and config.config():
        document = PROGRAM.load_config(config.config())
        print(f"kube-proxy: loaded {KUBE_PROXY_CONFIG_KIND} from {config.config()}", flush=True)
        healthz: tuple[str, int] | None = kube_proxy_healthz_address(
            document.get("healthzBindAddress") or "", document.get("bindAddress") or ""
        )
    else:
        mode = parsed.values["proxy-mode"].config() if "proxy-mode" in parsed.values else ""
        if mode not in ("", *PROXY_MODES):
            supported = ", ".join(f'"{name}"' for name in PROXY_MODES)
            PROGRAM.fail(
                f'KubeProxyConfiguration.mode: Unsupported value: "{mode}": supported values: '
                + supported
            )
        healthz = kube_proxy_flags_healthz_address(parsed.values)
    run_standin(KUBE_PROXY, healthz)


if __name__ == "__main__":  # python -m nodehost.plugins.proxy.standin [ARGS...]
    kube_proxy_main()
