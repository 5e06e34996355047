"""containerd as the node's container runtime: its configuration file and its process.

:func:`render_config` writes a containerd configuration (version 2) that
keeps everything containerd would put in fixed places under the configured
folders:

* ``root``, ``state``, the gRPC socket and the ttrpc socket (``<socket>.ttrpc``);
* the ``opt`` plugin's folder (``/opt/containerd`` by default);
* no debug or metrics listeners;
* the CRI plugin's CNI configuration and binary directories from the
  node's network (:func:`nodehost.cni.node_network`): the kubelet's pods and
  ``nodehost network check`` see the same network;
* the CRI plugin's pod sandbox ("pause") image, ``sandbox_image``: Origin's
  pod infrastructure image, ``imageConfig.format`` expanded for ``pod``;
* runc's cgroup driver: ``SystemdCgroup`` true only for the ``systemd`` driver;
* CRI's runc root under ``state`` instead of ``/run/containerd/runc``.

What containerd 1.6 still writes outside them: the shims' sockets in
``/run/containerd/s`` (fixed in containerd's code), and what clients choose
(``ctr``'s FIFOs in ``/run/containerd/fifo`` unless ``--fifo-dir``, runc's root
unless ``--runc-root``, cgroups of the ``default`` namespace).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from nodehost.cni import DEFAULT_BIN_DIRS, DEFAULT_CONF_DIR, CniNetwork
from nodehost.plugins.runtime.settings import Paths

CONFIG_FILE_NAME = "containerd.toml"
#: containerd ends its shims' connections and exits within a few seconds of SIGTERM.
STOP_GRACE = 15.0


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)


def render_config(
    paths: Paths, network: CniNetwork | None, cgroup_driver: str, sandbox_image: str
) -> bytes:
    """The containerd configuration (version 2): ``paths``, network, driver, pause image."""
    conf_dir = network.conf_dir if network else DEFAULT_CONF_DIR
    bin_dirs = network.bin_dirs if network else DEFAULT_BIN_DIRS
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    runc = f"{cri}.containerd.runtimes.runc"
    lines = [
        "# Written by nodehost (the runtime component); changes are overwritten at start.",
        "version = 2",
        f"root = {toml_string(paths.root)}",
        f"state = {toml_string(paths.state)}",
        "",
        "[grpc]",
        f"  address = {toml_string(paths.socket)}",
        "",
        "[ttrpc]",
        f"  address = {toml_string(paths.socket + '.ttrpc')}",
        "",
        "[debug]",
        '  address = ""',
        "",
        "[metrics]",
        '  address = ""',
        "",
        '[plugins."io.containerd.internal.v1.opt"]',
        f"  path = {toml_string(paths.opt)}",
        "",
        f"[{cri}]",
        f"  sandbox_image = {toml_string(sandbox_image)}",
        "",
        f"[{cri}.cni]",
        f"  conf_dir = {toml_string(conf_dir)}",
        f"  bin_dir = {toml_string(_first_existing(bin_dirs))}",
        "",
        f"[{cri}.containerd]",
        '  default_runtime_name = "runc"',
        "",
        f"[{runc}]",
        '  runtime_type = "io.containerd.runc.v2"',
        "",
        f"[{runc}.options]",
        f"  SystemdCgroup = {'true' if cgroup_driver == 'systemd' else 'false'}",
        f"  Root = {toml_string(os.path.join(paths.state, 'runc'))}",
        "",
    ]
    return "\n".join(lines).encode()


def _first_existing(directories: Iterable[str]) -> str:
    """containerd 1.6 takes one CNI binary directory: the first that exists, else the first."""
    directories = tuple(directories)
    for directory in directories:
        if os.path.isdir(directory):
            return directory
    return directories[0]


def containerd_argv(config_path: str) -> tuple[str, ...]:
    """The command line: everything else is in the configuration file."""
    return ("containerd", "--config", config_path)
