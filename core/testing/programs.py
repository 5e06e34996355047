"""Stand-ins for the kubelet and kube-proxy: the real programs' command lines and config files.

Each stand-in is a console script (``nodehost-standin-kubelet``,
``nodehost-standin-kube-proxy``; also ``python -m nodehost.testing.programs
kubelet|kube-proxy ARGS``) that behaves as the current program does at the
boundary nodehost touches, using the program's tables from
:mod:`nodehost.kube.programs`:

* the command line is parsed with the program's flag set; an unknown flag or
  a bad value prints the program's message (kubelet: ``Error: failed to parse
  kubelet flag: unknown flag: --foo``; kube-proxy: ``Error: unknown flag:
  --foo``) and exits 1; a positional argument is refused as the program
  refuses it;
* ``--config FILE`` is read and checked (apiVersion, kind, known fields at the
  top and inside the structures the flags reach, value types; for kube-proxy
  a supported ``mode``); a missing or
  wrong file prints the program's message (``Error: failed to load kubelet
  config file, path: FILE, error: ...``, ``Error: failed complete: FILE:
  ...``) and exits 1.  With a config file kube-proxy ignores the flags that
  map to its fields, and so does its stand-in; without one, ``--proxy-mode``
  must name a mode a current kube-proxy has (``userspace`` is gone);
* ``/healthz`` is served where the program would serve it: the kubelet on
  ``healthzBindAddress:healthzPort`` (default ``127.0.0.1:10248``; flags
  override the file; port 0 means no server), kube-proxy on
  ``healthzBindAddress`` (default ``0.0.0.0:10256``; without ``--config``,
  from ``--healthz-bind-address``/``--healthz-port``, port 0 meaning none);
* the kubelet, given ``--kubeconfig``, registers its Node, renews its Lease
  and reports the ``Ready`` condition from its container runtime's CRI
  status, as the real one does (:mod:`nodehost.testing.nodeagent`);
* SIGTERM exits 0; the ``NODEHOST_STANDIN_[<PROGRAM>_]*`` variables of
  :mod:`nodehost.testing.standin` make it crash, hang on stop, ignore
  SIGTERM, fork a grandchild or be slow to become ready.

A :class:`FakeProgram` describes one program as its stand-in imitates it.
Every error is one ``Error: ...`` line on stderr (component-base's
``cli.Run``) and exit status 1; ``--help`` prints the flags and exits 0;
``--version`` prints a version marked as a stand-in and exits 0; deprecated
flags print pflag's ``Flag --x has been deprecated, ...`` line on stderr.
Unlike the real kubelet, an unknown field in its config file is an error
(the kubelet only warns), so nodehost never writes one.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from nodehost.config.hostport import join_host_port, parse_ip
from nodehost.flagsline import go_quote
from nodehost.kube import programs as kube
from nodehost.kube.configfile import read_config_file
from nodehost.kube.flags import FlagSet, HelpRequested, ParsedArgs
from nodehost.kube.goparse import FlagError
from nodehost.kube.values import Value
from nodehost.testing.standin import run_standin

#: What ``--version`` prints after ``Kubernetes``.
STANDIN_VERSION = "v1.33.0-nodehost-standin"
EXIT_ERROR = 1


@dataclass(frozen=True)
class FakeProgram:
    """One real program as its stand-in imitates it.

    ``flag_error`` formats a command-line error (``{error}``);
    ``config_error`` formats a config-file error (``{path}``, ``{error}``);
    ``check`` lists what is wrong with a parsed config document;
    ``extra_arguments`` words the error for positional arguments.
    """

    name: str
    flags: FlagSet
    flag_error: str
    config_error: str
    extra_arguments: Callable[[list[str]], str]
    check: Callable[[Any], list[str]]

    def parse(self, argv: Sequence[str]) -> ParsedArgs:
        """Parse ``argv`` like the real program; handle ``--help``/``--version``; exit on errors."""
        try:
            parsed = self.flags.parse_args(argv)
        except HelpRequested:
            self.print_help()
        except FlagError as error:
            self.fail(self.flag_error.format(error=error))
        for warning in parsed.warnings:
            print(warning, file=sys.stderr, flush=True)
        if "help" in parsed.values and parsed.values["help"].config():
            self.print_help()
        version = parsed.values.get("version")
        if version is not None and version.config() != "false":
            print(f"Kubernetes {STANDIN_VERSION}", flush=True)
            raise SystemExit(0)
        if parsed.positional:
            self.fail(self.extra_arguments(parsed.positional))
        return parsed

    def load_config(self, path: str) -> dict[str, Any]:
        """Read and check the config file at ``path``; exit 1 with the program's message if bad."""
        try:
            document = read_config_file(path)
        except ValueError as error:
            self.fail(self.config_error.format(path=path, error=error))
        problems = self.check(document)
        if problems:
            self.fail(self.config_error.format(path=path, error="; ".join(problems)))
        return document

    def fail(self, message: str) -> NoReturn:
        print(f"Error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_ERROR)

    def print_help(self) -> NoReturn:
        lines = [
            f"{self.name} (nodehost stand-in: accepts the real program's flags)",
            "",
            "Usage:",
            f"  {self.name} [flags]",
            "",
            "Flags:",
        ]
        for flag in sorted(self.flags, key=lambda flag: flag.name):
            short = f"-{flag.shorthand}, " if flag.shorthand else "    "
            lines.append(f"  {short}--{flag.name} {flag.new_value().type_name}")
        print("\n".join(lines), flush=True)
        raise SystemExit(0)


# --- the kubelet ------------------------------------------------------------

KUBELET = FakeProgram(
    name=kube.KUBELET,
    flags=kube.KUBELET_FLAGS,
    flag_error="failed to parse kubelet flag: {error}",
    config_error="failed to load kubelet config file, path: {path}, error: {error}",
    extra_arguments=lambda args: f"unknown command {args[0]}",
    check=kube.check_kubelet_configuration,
)


def kubelet_healthz_address(
    flags: Mapping[str, Value], document: Mapping[str, Any]
) -> tuple[str, int] | None:
    """Where the kubelet serves ``/healthz``: flags over the file over the defaults; None if off."""
    port = document.get("healthzPort", kube.KUBELET_HEALTHZ_PORT)
    host = document.get("healthzBindAddress") or kube.KUBELET_HEALTHZ_BIND_ADDRESS
    if "healthz-port" in flags:
        port = flags["healthz-port"].config()
    if "healthz-bind-address" in flags:
        host = flags["healthz-bind-address"].config() or kube.KUBELET_HEALTHZ_BIND_ADDRESS
    return None if port == 0 else (host, port)


def kubelet_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kubelet`` console script."""
    parsed = KUBELET.parse(sys.argv[1:] if argv is None else argv)
    config = parsed.values.get("config")
    document: dict[str, Any] = {}
    if config is not None and config.config():
        document = KUBELET.load_config(config.config())
        print(f"kubelet: loaded {kube.KUBELET_CONFIG_KIND} from {config.config()}", flush=True)
    flags = {name: value.config() for name, value in parsed.values.items()}
    if flags.get("kubeconfig"):  # without one the kubelet runs standalone: no API server
        start_node_agent(flags, document)
    run_standin(kube.KUBELET, kubelet_healthz_address(parsed.values, document))


def start_node_agent(flags: Mapping[str, Any], document: Mapping[str, Any]) -> None:
    """Run :class:`~nodehost.testing.nodeagent.NodeAgent` in a thread of its own (the
    stand-in's main thread keeps its signals and ``/healthz``)."""
    import asyncio
    import threading

    def run() -> None:
        from nodehost.testing.nodeagent import NodeAgent, node_settings

        asyncio.run(NodeAgent(node_settings(flags, document, STANDIN_VERSION)).run())

    threading.Thread(target=run, name="kubelet-node-agent", daemon=True).start()


# --- kube-proxy ------------------------------------------------------------

KUBE_PROXY = FakeProgram(
    name=kube.KUBE_PROXY,
    flags=kube.KUBE_PROXY_FLAGS,
    flag_error="{error}",
    config_error="failed complete: {path}: {error}",
    extra_arguments=lambda args: (
        f'"kube-proxy" does not take any arguments, got [{" ".join(map(go_quote, args))}]'
    ),
    check=kube.check_kube_proxy_configuration,
)


def kube_proxy_flags_healthz_address(flags: Mapping[str, Value]) -> tuple[str, int] | None:
    """``/healthz`` from flags alone (no ``--config``): kube-proxy's deprecated-port rule.

    ``--healthz-port=0`` turns the server off; another port is appended to an
    address that has none.
    """
    address = kube.KUBE_PROXY_HEALTHZ_BIND_ADDRESS
    if "healthz-bind-address" in flags:
        address = flags["healthz-bind-address"].config()
    port = (
        flags["healthz-port"].config() if "healthz-port" in flags else kube.KUBE_PROXY_HEALTHZ_PORT
    )
    if port == 0 or not address:
        return None
    if parse_ip(address) is not None:
        address = join_host_port(address, port)
    bind = flags["bind-address"].config() if "bind-address" in flags else ""
    return kube.kube_proxy_healthz_address(address, bind)


def kube_proxy_main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``nodehost-standin-kube-proxy`` console script."""
    parsed = KUBE_PROXY.parse(sys.argv[1:] if argv is None else argv)
    cleanup = parsed.values.get("cleanup")
    if cleanup is not None and cleanup.config() != "false":
        # The real one removes its iptables, IPVS and nftables rules and exits; a stand-in
        # made none.
        print("kube-proxy: --cleanup: the stand-in made no rules, none to remove", flush=True)
        raise SystemExit(0)
    config = parsed.values.get("config")
    if config is not None and config.config():
        document = KUBE_PROXY.load_config(config.config())
        print(
            f"kube-proxy: loaded {kube.KUBE_PROXY_CONFIG_KIND} from {config.config()}", flush=True
        )
        healthz: tuple[str, int] | None = kube.kube_proxy_healthz_address(
            document.get("healthzBindAddress") or "", document.get("bindAddress") or ""
        )
    else:
        mode = parsed.values["proxy-mode"].config() if "proxy-mode" in parsed.values else ""
        if mode not in ("", *kube.PROXY_MODES):
            supported = ", ".join(f'"{name}"' for name in kube.PROXY_MODES)
            KUBE_PROXY.fail(
                f'KubeProxyConfiguration.mode: Unsupported value: "{mode}": supported values: '
                + supported
            )
        healthz = kube_proxy_flags_healthz_address(parsed.values)
    run_standin(kube.KUBE_PROXY, healthz)


#: The console script of each stand-in, by the program it stands in for.
MAINS = {"kubelet": kubelet_main, "kube-proxy": kube_proxy_main}


if __name__ == "__main__":  # python -m nodehost.testing.programs PROGRAM [ARGS...]
    MAINS[sys.argv[1]](sys.argv[2:])
