"""The kubelet's stand-in: the real kubelet's command line, config file and ``/healthz``.

The console script ``nodehost-standin-kubelet`` (also ``python -m
nodehost.plugins.kubelet.standin ARGS``) behaves as a current kubelet does at
the boundary nodehost touches, using the plugin's tables
(:mod:`nodehost.plugins.kubelet.flags`, :mod:`nodehost.plugins.kubelet.configfile`):

* the command line is parsed with the kubelet's flag set; an unknown flag or a
  bad value prints ``Error: failed to parse kubelet flag: unknown flag:
  --foo`` and exits 1; a positional argument is refused as the kubelet refuses it;
* ``--config FILE`` is read and checked (apiVersion, kind, known fields at the
  top and inside the structures the flags reach, value types); a missing or
  wrong file prints ``Error: failed to load kubelet config file, path: FILE,
  error: ...`` and exits 1.  Unlike the real kubelet, an unknown field is an
  error (the kubelet only warns), so nodehost never writes one;
* ``/healthz`` is served on ``healthzBindAddress:healthzPort`` (default
  ``127.0.0.1:10248``; flags override the file; port 0 means no server);
* given ``--kubeconfig``, it registers its Node, renews its Lease and reports
  the ``Ready`` condition from its container runtime's CRI status, as the real
  one does (:mod:`nodehost.plugins.kubelet.nodeagent`);
* SIGTERM exits 0; the ``NODEHOST_STANDIN_[KUBELET_]*`` variables of
  :mod:`nodehost.testing.standin` make it crash, hang on stop, ignore
  SIGTERM, fork a grandchild or be slow to become ready.

The generic part (flags, config file, help, version, errors) is
:class:`nodehost.testing.fakeprogram.FakeProgram`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from nodehost.kube.values import Value
from nodehost.plugins.kubelet.configfile import (
    KUBELET_CONFIG_KIND,
    KUBELET_HEALTHZ_BIND_ADDRESS,
    KUBELET_HEALTHZ_PORT,
    check_kubelet_configuration,
)
from nodehost.plugins.kubelet.flags import KUBELET, KUBELET_FLAGS
from nodehost.testing.fakeprogram import STANDIN_VERSION, FakeProgram
from nodehost.testing.standin import run_standin

PROGRAM = FakeProgram(
    name=KUBELET,
    flags=KUBELET_FLAGS,
    flag_error="failed to parse kubelet flag: {error}",
    config_error="failed to load kubelet config file, path: {path}, error: {error}",
    extra_arguments=lambda args: f"unknown command {args[0]}",
    check=check_kubelet_configuration,
)


def kubelet_healthz_address(
    flags: Mapping[str, Value], document: Mapping[str, Any]
) -> tuple[str, int] | None:
    """Where the kubelet serves ``/healthz``: flags over the file over the defaults; None if off."""
    port = document.get("healthzPort", KUBELET_HEALTHZ_PORT)
    host = document.get("healthzBindAddress") or KUBELET_HEALTHZ_BIND_ADDRESS
    if "healthz-port" in flags:
        port = flags["healthz-port"].config()
    if "healthz-bind-address" in flags:
        host = flags["healthz-bind-address"].config() or KUBELET_HEALTHZ_BIND_ADDRESS
    return None if port == 0 else (host, port)


def kubelet_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kubelet`` console script."""
    parsed = PROGRAM.parse(sys.argv[1:] if argv is None else argv)
    config = parsed.values.get("config")
    document: dict[str, Any] = {}
    if config is not None and config.config():
        document = PROGRAM.load_config(config.config())
        print(f"kubelet: loaded {KUBELET_CONFIG_KIND} from {config.config()}", flush=True)
    flags = {name: value.config() for name, value in parsed.values.items()}
    if flags.get("kubeconfig"):  # without one the kubelet runs standalone: no API server
        start_node_agent(flags, document)
    run_standin(KUBELET, kubelet_healthz_address(parsed.values, document))


def start_node_agent(flags: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    """Run :class:`~nodehost.plugins.kubelet.nodeagent.NodeAgent` in a thread of its own (the
    stand-in's main thread keeps its signals and ``/healthz``)."""
    import asyncio
    import threading

    def run() -> None:
        from nodehost.plugins.kubelet.nodeagent import NodeAgent, node_settings

        asyncio.run(NodeAgent(node_settings(flags, document, STANDIN_VERSION)).run())

    threading.Thread(target=run, name="kubelet-node-agent", daemon=True).start()


if __name__ == "__main__":  # python -m nodehost.plugins.kubelet.standin [ARGS...]
    kubelet_main()
