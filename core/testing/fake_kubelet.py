"""A stand-in for the kubelet: accepts its flags, checks its config file, serves /healthz.

Installed as ``nodehost-standin-kubelet`` (also ``python -m
nodehost.testing.fake_kubelet``).  It behaves as a current kubelet does at
the boundary nodehost touches:

* the command line is parsed with the kubelet's flag set
  (:data:`nodehost.kube.kubelet.KUBELET_FLAGS`); an unknown flag or a bad
  value prints ``Error: failed to parse kubelet flag: unknown flag: --foo``
  and exits 1, a positional argument ``Error: unknown command <arg>``;
* ``--config FILE`` is read and checked (apiVersion
  ``kubelet.config.k8s.io/v1beta1``, kind ``KubeletConfiguration``, known
  top-level fields, value types); a missing or wrong file prints ``Error:
  failed to load kubelet config file, path: FILE, error: ...`` and exits 1;
* ``/healthz`` is served on ``healthzBindAddress:healthzPort`` (default
  ``127.0.0.1:10248``; command-line flags override the file, as in the real
  kubelet; port 0 means no server);
* SIGTERM exits 0; the ``NODEHOST_STANDIN_[KUBELET_]*`` variables of
  :mod:`nodehost.testing.standin` make it crash, hang on stop, ignore
  SIGTERM, fork a grandchild or be slow to become ready.

Unlike the real kubelet, an unknown field in the config file is an error
(the kubelet only warns), so nodehost never writes one.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from nodehost.kube import kubelet as kube
from nodehost.kube.values import Value
from nodehost.testing.fake_program import FakeProgram
from nodehost.testing.standin import run_standin

PROGRAM = FakeProgram(
    name=kube.PROGRAM,
    flags=kube.KUBELET_FLAGS,
    flag_error="failed to parse kubelet flag: {error}",
    config_error="failed to load kubelet config file, path: {path}, error: {error}",
    extra_arguments=lambda args: f"unknown command {args[0]}",
    check=kube.check_configuration,
)


def healthz_address(
    flags: Mapping[str, Value], document: Mapping[str, Any]
) -> tuple[str, int] | None:
    """Where the kubelet serves ``/healthz``: flags over the file over the defaults; None if off."""
    port = document.get("healthzPort", kube.DEFAULT_HEALTHZ_PORT)
    host = document.get("healthzBindAddress") or kube.DEFAULT_HEALTHZ_BIND_ADDRESS
    if "healthz-port" in flags:
        port = flags["healthz-port"].config()
    if "healthz-bind-address" in flags:
        host = flags["healthz-bind-address"].config() or kube.DEFAULT_HEALTHZ_BIND_ADDRESS
    return None if port == 0 else (host, port)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kubelet`` console script."""
    parsed = PROGRAM.parse(sys.argv[1:] if argv is None else argv)
    config = parsed.values.get("config")
    document: dict[str, Any] = {}
    if config is not None and config.config():
        document = PROGRAM.load_config(config.config())
        print(f"kubelet: loaded {kube.CONFIG_KIND} from {config.config()}", flush=True)
    run_standin(kube.PROGRAM, healthz_address(parsed.values, document))


if __name__ == "__main__":
    main()
