"""A stand-in for kube-proxy: accepts its flags, checks its config file, serves /healthz.

Installed as ``nodehost-standin-kube-proxy`` (also ``python -m
nodehost.testing.fake_kube_proxy``).  It behaves as a current kube-proxy does
at the boundary nodehost touches:

* the command line is parsed with kube-proxy's flag set
  (:data:`nodehost.kube.kube_proxy.KUBE_PROXY_FLAGS`); an unknown flag or a
  bad value prints ``Error: unknown flag: --foo`` and exits 1; a positional
  argument is refused as kube-proxy refuses it;
* ``--config FILE`` is read and checked (apiVersion
  ``kubeproxy.config.k8s.io/v1alpha1``, kind ``KubeProxyConfiguration``,
  known fields, also inside the structures its flags reach, value types, a
  supported ``mode``); a missing or
  wrong file prints ``Error: failed complete: FILE: ...`` and exits 1.  With a
  config file the flags that map to its fields are ignored, as kube-proxy
  ignores them.  Without one, ``--proxy-mode`` must name a mode a current
  kube-proxy has (``userspace`` is gone);
* ``/healthz`` is served on ``healthzBindAddress`` (default ``0.0.0.0:10256``;
  without ``--config``, from ``--healthz-bind-address``/``--healthz-port``,
  where port 0 means no server);
* SIGTERM exits 0; the ``NODEHOST_STANDIN_[KUBE_PROXY_]*`` variables of
  :mod:`nodehost.testing.standin` make it misbehave on request.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from nodehost.config.hostport import join_host_port, parse_ip
from nodehost.flagsline import go_quote
from nodehost.kube import kube_proxy as kube
from nodehost.kube.values import Value
from nodehost.testing.fake_program import FakeProgram
from nodehost.testing.standin import run_standin

PROGRAM = FakeProgram(
    name=kube.PROGRAM,
    flags=kube.KUBE_PROXY_FLAGS,
    flag_error="{error}",
    config_error="failed complete: {path}: {error}",
    extra_arguments=lambda args: (
        f'"kube-proxy" does not take any arguments, got [{" ".join(map(go_quote, args))}]'
    ),
    check=kube.check_configuration,
)


def flags_healthz_address(flags: Mapping[str, Value]) -> tuple[str, int] | None:
    """``/healthz`` from flags alone (no ``--config``): kube-proxy's deprecated-port rule.

    ``--healthz-port=0`` turns the server off; another port is appended to an
    address that has none.
    """
    address = kube.DEFAULT_HEALTHZ_BIND_ADDRESS
    if "healthz-bind-address" in flags:
        address = flags["healthz-bind-address"].config()
    port = flags["healthz-port"].config() if "healthz-port" in flags else kube.DEFAULT_HEALTHZ_PORT
    if port == 0 or not address:
        return None
    if parse_ip(address) is not None:
        address = join_host_port(address, port)
    bind = flags["bind-address"].config() if "bind-address" in flags else ""
    return kube.healthz_address(address, bind)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kube-proxy`` console script."""
    parsed = PROGRAM.parse(sys.argv[1:] if argv is None else argv)
    config = parsed.values.get("config")
    if config is not None and config.config():
        document = PROGRAM.load_config(config.config())
        print(f"kube-proxy: loaded {kube.CONFIG_KIND} from {config.config()}", flush=True)
        healthz = kube.healthz_address(
            document.get("healthzBindAddress") or "", document.get("bindAddress") or ""
        )
    else:
        mode = parsed.values["proxy-mode"].config() if "proxy-mode" in parsed.values else ""
        if mode not in ("", *kube.PROXY_MODES):
            supported = ", ".join(f'"{name}"' for name in kube.PROXY_MODES)
            PROGRAM.fail(
                f'KubeProxyConfiguration.mode: Unsupported value: "{mode}": supported values: '
                + supported
            )
        healthz = flags_healthz_address(parsed.values)
    run_standin(kube.PROGRAM, healthz)


if __name__ == "__main__":
    main()
