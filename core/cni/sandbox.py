"""A throw-away pod sandbox: run CNI chains for real in a fresh network namespace.

:class:`Sandbox` is what a container runtime does for one pod, made safe to
run on a live node and in tests: it creates a uniquely named namespace,
attaches networks to it (ADD), checks (CHECK) and detaches them (DEL), and on
exit removes everything it caused -- the namespace and its veths, bridges that
did not exist before, host-local reservations (kept in a private data
directory seeded with the node's live reservations, so an address a pod holds
is never handed out twice), and the forwarding switches plugins flipped::

    with Sandbox(bin_dirs=network.bin_dirs) as sandbox:
        attachment = sandbox.attach(conflist)          # ADD
        sandbox.check(attachment)                      # CHECK
        sandbox.detach(attachment)                     # DEL
    print(sandbox.cleanup_report)

Needs root (``CAP_NET_ADMIN``, ``CAP_SYS_ADMIN``) and iproute2.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodehost.binaries import which
from nodehost.cni import hostnet, netns
from nodehost.cni.chain import add_network, check_network, delete_network
from nodehost.cni.invoke import DEFAULT_TIMEOUT, CniError, RuntimeConf
from nodehost.cni.plugins import DEFAULT_BIN_DIRS
from nodehost.errors import RuntimeFailure

#: Where host-local keeps its reservations unless a configuration says otherwise.
HOST_LOCAL_DATA_DIR = "/var/lib/cni/networks"

#: The loopback network a runtime attaches to every pod's ``lo``.
LOOPBACK_CONFLIST = {
    "cniVersion": "1.0.0",
    "name": "cni-loopback",
    "plugins": [{"type": "loopback"}],
}

_SERVE_ONCE = (
    "import socket, sys\n"
    "server = socket.create_server((sys.argv[1], 0), family=socket.AF_INET6 if ':' in sys.argv[1] "
    "else socket.AF_INET)\n"
    "server.settimeout(float(sys.argv[2]))\n"
    "print(server.getsockname()[1], flush=True)\n"
    "try:\n"
    "    peer, source = server.accept()\n"
    "except OSError as error:\n"
    "    sys.exit(f'{error.strerror or error}')\n"
    "print(source[0], flush=True)\n"
)

_CONNECT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), float(sys.argv[3])).close()\n"
    "except OSError as error:\n"
    "    sys.exit(f'{error.strerror or error}')\n"
)


def unavailable_reason() -> str | None:
    """Why a sandbox cannot be made here (not root, no iproute2), or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces and veth pairs need CAP_NET_ADMIN)"
    if which("ip") is None:
        return "needs the 'ip' command (iproute2)"
    return None


@dataclass
class Attachment:
    """One network attached to the sandbox: the list run, the runtime side, the ADD result."""

    conflist: dict[str, Any]
    runtime: RuntimeConf
    result: dict[str, Any] | None = None
    detached: bool = False

    def addresses(self) -> list[tuple[hostnet.IPInterface, str | None]]:
        """``(address, gateway)`` pairs of the result (CNI 0.3+ ``ips`` or 0.2 ``ip4``/``ip6``)."""
        result = self.result or {}
        entries = list(result.get("ips") or ())
        entries += [
            result[key] | {"address": result[key]["ip"]} for key in ("ip4", "ip6") if key in result
        ]
        return [(ipaddress.ip_interface(e["address"]), e.get("gateway")) for e in entries]

    def host_interfaces(self) -> list[str]:
        """Names of the result's interfaces outside the sandbox (bridge, host veth)."""
        return [
            str(item["name"])
            for item in (self.result or {}).get("interfaces", ())
            if isinstance(item, Mapping) and not item.get("sandbox") and item.get("name")
        ]


@dataclass
class Sandbox:
    """A throw-away network namespace; see the module docstring.  Use it as a context manager."""

    bin_dirs: Sequence[str] = DEFAULT_BIN_DIRS
    prefix: str = "nh-sandbox"
    timeout: float = DEFAULT_TIMEOUT
    name: str = ""
    ipam_dir: str = ""
    attachments: list[Attachment] = field(default_factory=list)
    cleanup_report: list[str] = field(default_factory=list)
    _links_before: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _sysctls: hostnet.Sysctls = field(default=hostnet.Sysctls({}), init=False, repr=False)
    _workdir: str = field(default="", init=False, repr=False)

    def __enter__(self) -> Sandbox:
        reason = unavailable_reason()
        if reason:
            raise RuntimeFailure(f"cannot create a network sandbox: {reason}")
        self._links_before = hostnet.links()
        self._sysctls = hostnet.Sysctls.snapshot()
        self._workdir = tempfile.mkdtemp(prefix="nodehost-cni-")
        self.name = netns.unique_name(self.prefix)
        try:
            netns.create(self.name)
        except BaseException:
            shutil.rmtree(self._workdir, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def netns_path(self) -> str:
        return netns.path_of(self.name)

    def sibling(self) -> Sandbox:
        """A second sandbox (a second pod) sharing this one's private IPAM reservations.

        Two pods on one network need distinct addresses: the sibling's
        host-local allocations go to the same private data directory.  Open it
        with ``with`` inside this sandbox's lifetime; it removes its own
        namespace, never the shared reservations.
        """
        if not self._workdir:
            raise RuntimeFailure("open the sandbox before making a sibling")
        return Sandbox(
            bin_dirs=self.bin_dirs,
            prefix=self.prefix,
            timeout=self.timeout,
            ipam_dir=self._ipam_root(),
        )

    # --- CNI operations -----------------------------------------------------------

    def attach(
        self,
        conflist: Mapping[str, Any],
        ifname: str = "eth0",
        *,
        private_ipam: bool = True,
        capability_args: Mapping[str, Any] | None = None,
    ) -> Attachment:
        """ADD ``conflist`` on ``ifname``; the attachment (its ``result`` set).

        Raises :class:`CniError` from the failing plugin; the attachment is
        then still DELeted when the sandbox closes, as runtimes do.
        """
        own: dict[str, Any] = copy.deepcopy(dict(conflist))
        if private_ipam:
            self._privatise_ipam(own)
        runtime = RuntimeConf(
            container_id=netns.unique_name(self.prefix),
            netns=self.netns_path,
            ifname=ifname,
            capability_args=dict(capability_args or {}),
        )
        attachment = Attachment(own, runtime)
        self.attachments.append(attachment)
        attachment.result = add_network(own, runtime, self.bin_dirs, timeout=self.timeout)
        return attachment

    def attach_loopback(self) -> Attachment:
        """Bring ``lo`` up with the ``loopback`` plugin, as runtimes do for every pod."""
        return self.attach(LOOPBACK_CONFLIST, "lo", private_ipam=False)

    def check(self, attachment: Attachment) -> None:
        """CHECK the attachment against its ADD result (:class:`CniError` on failure)."""
        assert attachment.result is not None, "CHECK needs a successful ADD"
        check_network(
            attachment.conflist,
            attachment.runtime,
            self.bin_dirs,
            attachment.result,
            timeout=self.timeout,
        )

    def detach(self, attachment: Attachment) -> None:
        """DEL the attachment (every plugin, last first; :class:`CniError` after all ran)."""
        attachment.detached = True
        delete_network(
            attachment.conflist,
            attachment.runtime,
            self.bin_dirs,
            attachment.result,
            timeout=self.timeout,
        )

    # --- looking inside ------------------------------------------------------------

    def addresses(self, ifname: str) -> list[hostnet.IPInterface]:
        """The addresses of ``ifname`` inside the sandbox ([] if it does not exist)."""
        try:
            return hostnet.addresses(self.name, ifname).get(ifname, [])
        except RuntimeFailure:
            return []

    def link_is_up(self, ifname: str) -> bool:
        try:
            return hostnet.link_is_up(ifname, self.name)
        except RuntimeFailure:
            return False

    def connect(self, host: str, port: int, timeout: float = 5.0) -> None:
        """Open a TCP connection from inside the sandbox to ``host:port``.

        Raises :class:`RuntimeFailure` with the connect error when it fails.
        """
        argv = [sys.executable, "-I", "-S", "-c", _CONNECT, host, str(port), str(timeout)]
        try:
            done = subprocess.run(
                netns.exec_argv(self.name, argv),
                capture_output=True,
                text=True,
                timeout=timeout + 10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeFailure(f"TCP connect to {host}:{port} did not finish") from None
        if done.returncode != 0:
            raise RuntimeFailure(
                f"TCP connect from the namespace to {host}:{port} failed: "
                f"{done.stderr.strip() or f'exit {done.returncode}'}"
            )

    def reach_peer(self, peer: Sandbox, address: str, timeout: float = 5.0) -> str:
        """Prove this sandbox reaches ``address`` inside ``peer``: a listener there, a connect.

        Returns the source address the listener saw; :class:`RuntimeFailure`
        when the listener cannot bind ``address`` in ``peer`` or no connection came.
        """
        argv = [sys.executable, "-I", "-S", "-c", _SERVE_ONCE, address, str(timeout)]
        with subprocess.Popen(
            netns.exec_argv(peer.name, argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as listener:
            assert listener.stdout is not None
            port = listener.stdout.readline().strip()
            if not port.isdigit():
                listener.wait(timeout)
                detail = listener.stderr.read().strip() if listener.stderr else ""
                raise RuntimeFailure(
                    f"cannot listen on {address} in namespace {peer.name}: "
                    f"{detail.splitlines()[-1] if detail else 'no port'}"
                )
            try:
                self.connect(address, int(port), timeout)
            finally:
                try:
                    out, _ = listener.communicate(timeout=timeout + 5)
                except subprocess.TimeoutExpired:
                    listener.kill()
                    out, _ = listener.communicate()
        if listener.returncode != 0:
            raise RuntimeFailure(f"the listener on {address} in {peer.name} saw no connection")
        return out.strip()

    def reach(self, address: str, timeout: float = 5.0) -> str:
        """Prove the sandbox reaches ``address`` (a host address): a listener there, a connect.

        Returns the source address the listener saw; :class:`RuntimeFailure`
        when the listener cannot bind (not a host address) or no connection came.
        """
        family = socket.AF_INET6 if ipaddress.ip_address(address).version == 6 else socket.AF_INET
        try:
            listener = socket.create_server((address, 0), family=family)
        except OSError as error:
            raise RuntimeFailure(
                f"cannot listen on the gateway {address} on this host: {error.strerror or error}"
            ) from None
        with listener:
            listener.settimeout(timeout)
            self.connect(address, listener.getsockname()[1], timeout)
            try:
                peer, source = listener.accept()
            except TimeoutError:
                raise RuntimeFailure(f"the listener on {address} saw no connection") from None
            peer.close()
        return str(source[0])

    # --- cleanup ---------------------------------------------------------------------

    def close(self) -> None:
        """DEL what is still attached, then remove everything the sandbox caused.

        Safe to call twice.  ``cleanup_report`` lists what was removed or
        restored; errors of the DELs are logged into the report, not raised.
        """
        if not self.name:
            return
        for attachment in reversed(self.attachments):
            if not attachment.detached:
                try:
                    self.detach(attachment)
                except CniError as error:
                    self.cleanup_report.append(f"DEL during cleanup: {error}")
        try:
            netns.delete(self.name)
            self.cleanup_report.append(f"namespace {self.name} and its interfaces removed")
        except RuntimeFailure as error:
            self.cleanup_report.append(str(error))
        for link in self._caused_links():
            try:
                hostnet.delete_link(link)
                self.cleanup_report.append(f"link {link} removed (the sandbox created it)")
            except RuntimeFailure as error:
                self.cleanup_report.append(str(error))
        shutil.rmtree(self._workdir, ignore_errors=True)
        if not self.ipam_dir:
            self.cleanup_report.append("private IPAM reservations removed")
        self.cleanup_report.extend(f"{item} restored" for item in self._sysctls.restore())
        self.name = ""

    def _caused_links(self) -> list[str]:
        """Host links that did not exist before and that the attached networks name."""
        candidates: list[str] = []
        for attachment in self.attachments:
            candidates += attachment.host_interfaces()
            for plugin in attachment.conflist["plugins"]:
                if plugin.get("type") == "bridge":
                    candidates.append(str(plugin.get("bridge") or "cni0"))
        present = hostnet.links()
        return [
            name
            for name in dict.fromkeys(candidates)
            if name in present and name not in self._links_before
        ]

    def _ipam_root(self) -> str:
        """The private host-local data directory: shared with a parent, else in the workdir."""
        return self.ipam_dir or os.path.join(self._workdir, "ipam")

    def _privatise_ipam(self, conflist: dict[str, Any]) -> None:
        """Point host-local at a private data dir holding a copy of the live reservations."""
        for plugin in conflist["plugins"]:
            ipam = plugin.get("ipam")
            if not isinstance(ipam, dict) or ipam.get("type") != "host-local":
                continue
            live = os.path.join(str(ipam.get("dataDir") or HOST_LOCAL_DATA_DIR), conflist["name"])
            private = self._ipam_root()
            if os.path.isdir(live) and not os.path.exists(os.path.join(private, conflist["name"])):
                shutil.copytree(live, os.path.join(private, conflist["name"]), symlinks=True)
            ipam["dataDir"] = private
