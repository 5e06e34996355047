"""The local cluster's folder (``--local-cluster DIR``) and the settings it keeps there.

::

    DIR/                       0700
      cluster.json             0600  ports and bootstrap token, chosen at the first start
      signer/                        the cluster's CA (as ``nodehost ca create`` writes one)
      ca.crt                         the CA certificate (what clients trust)
      serving.crt, serving.key       the API server's serving pair        } written at
      admin.kubeconfig         0600  system:masters client certificate    } every start
      bootstrap.kubeconfig     0600  the bootstrap token                  }
      node/                          the node's folder (--config-dir): bootstrap writes it
      state/                         the node's state (--state-dir, unless given)

A later start with the same DIR keeps the CA, the ports and the token, so the
node's certificates and ``node.kubeconfig`` stay valid and bootstrap skips
the CSR; the API server's objects live in memory and start empty each time
(the node's config map is published again).  To start over, remove DIR.
"""

from __future__ import annotations

import contextlib
import json
import socket
from dataclasses import asdict, fields
from pathlib import Path
from typing import TYPE_CHECKING

from nodehost.config.jsonsafe import parse_json
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions

CONFIG_MAP = "node-config"
SETTINGS_FILE = "cluster.json"
DIRECTORY_MODE = 0o700
SETTINGS_MODE = 0o600
LOOPBACK = "127.0.0.1"


@frozen
class Layout:
    """Where everything of the local cluster in ``directory`` lives."""

    directory: Path

    @property
    def settings_file(self) -> Path:
        return self.directory / SETTINGS_FILE

    @property
    def signer_dir(self) -> Path:
        return self.directory / "signer"

    @property
    def admin_kubeconfig(self) -> Path:
        return self.directory / "admin.kubeconfig"

    @property
    def bootstrap_kubeconfig(self) -> Path:
        return self.directory / "bootstrap.kubeconfig"

    @property
    def node_dir(self) -> Path:
        return self.directory / "node"

    @property
    def state_dir(self) -> Path:
        return self.directory / "state"


@frozen
class ClusterSettings:
    """What the first start chose and every later start reuses (``cluster.json``).

    Ports are on loopback: the API server's, the node DNS server's (free for
    UDP and TCP), the kubelet's serving and healthz ports and kube-proxy's
    healthz port.  ``token`` is the bootstrap token (``<id>.<secret>``).
    """

    apiserver_port: int
    dns_port: int
    kubelet_port: int
    kubelet_healthz_port: int
    proxy_healthz_port: int
    token: str

    @classmethod
    def choose(cls) -> ClusterSettings:
        """Free ports now, and a new random bootstrap token."""
        import secrets  # hashlib and random: only when a cluster is made

        with contextlib.ExitStack() as held:  # each port held until all are chosen: distinct
            return cls(
                apiserver_port=free_port(held),
                dns_port=free_port(held, udp_too=True),
                kubelet_port=free_port(held),
                kubelet_healthz_port=free_port(held),
                proxy_healthz_port=free_port(held),
                token=f"{secrets.token_hex(3)}.{secrets.token_hex(8)}",
            )

    @property
    def apiserver_url(self) -> str:
        return f"https://{LOOPBACK}:{self.apiserver_port}"


def layout_of(options: StartOptions | None) -> Layout:
    """The layout of ``--local-cluster``'s folder (absolute; the current folder when not given)."""
    from nodehost.plugins.localcluster import cluster_dir

    return Layout(Path(cluster_dir(options) or "").absolute())


def read_settings(layout: Layout) -> ClusterSettings | None:
    """The settings an earlier start wrote, or None; ``RuntimeFailure`` if unusable."""
    from nodehost.fileread import STATE_LIMIT, read_text

    path = layout.settings_file
    try:
        data = parse_json(read_text(path, STATE_LIMIT), STATE_LIMIT)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise RuntimeFailure(
            f"{path}: {_why(error)}; remove {layout.directory} to start over"
        ) from None
    names = {item.name: item.type for item in fields(ClusterSettings)}
    if (
        not isinstance(data, dict)
        or set(data) != set(names)
        or any(type(data[name]).__name__ != kind for name, kind in names.items())
    ):
        raise RuntimeFailure(
            f"{path}: not a local cluster's settings (keys {', '.join(sorted(names))}); "
            f"remove {layout.directory} to start over"
        )
    return ClusterSettings(**data)


def settings_for(layout: Layout) -> ClusterSettings:
    """The kept settings, or new ones written (0600) into a new DIR (0700)."""
    from nodehost.pki.atomic import make_directories, write_atomic

    kept = read_settings(layout)
    if kept is not None:
        return kept
    chosen = ClusterSettings.choose()
    try:
        make_directories(layout.directory, DIRECTORY_MODE)
        text = json.dumps(asdict(chosen), indent=2) + "\n"
        write_atomic(layout.settings_file, text.encode(), SETTINGS_MODE, replace=False)
    except OSError as error:
        raise RuntimeFailure(f"cannot write {layout.settings_file}: {_why(error)}") from None
    return chosen


def free_port(held: contextlib.ExitStack, udp_too: bool = False) -> int:
    """A TCP port free on loopback now (and free for UDP too with ``udp_too``), bound
    until ``held`` closes, so that no other choice made meanwhile gets it too.

    Raises :class:`RuntimeFailure` when 100 ports in a row were taken for UDP.
    """
    for _ in range(100):
        tcp = held.enter_context(socket.socket())
        tcp.bind((LOOPBACK, 0))
        port: int = tcp.getsockname()[1]
        if not udp_too:
            return port
        udp = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        try:
            udp.bind((LOOPBACK, port))
        except OSError:
            continue
        return port
    raise RuntimeFailure(f"no port on {LOOPBACK} is free for both TCP and UDP")


def _why(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)
