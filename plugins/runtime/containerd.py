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
* ``restrict_oom_score_adj`` when nodehost lacks ``CAP_SYS_RESOURCE``
  (:func:`can_lower_oom_score_adj`): pods' OOM scores are kept at or above
  containerd's own, since runc could not lower them and no pod would start;
* runc's cgroup driver: ``SystemdCgroup`` true only for the ``systemd`` driver;
* CRI's runc root under ``state`` instead of ``/run/containerd/runc``;
* the CRI registry's lines (``registry``: its hosts folder and credentials,
  :mod:`.registries`), when there are any.

containerd's shims are workloads, not agents (:mod:`nodehost.daemon.workloads`):
containerd finds a shim on its ``PATH``, whose first folder,
``<state-dir>/runtime/bin``, holds a launcher per installed
``containerd-shim*`` program (:func:`shim_launchers`).  A shim started
through it leaves containerd's cgroup and marker variables, so a stop or a
crash of containerd or nodehost leaves it and its containers running, and a
new containerd on the same state reconnects to them.

What containerd 1.6 still writes outside them: the shims' sockets in
``/run/containerd/s`` (fixed in containerd's code), and what clients choose
(``ctr``'s FIFOs in ``/run/containerd/fifo`` unless ``--fifo-dir``, runc's root
unless ``--runc-root``, cgroups of the ``default`` namespace).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from nodehost.cni import DEFAULT_BIN_DIRS, DEFAULT_CONF_DIR, CniNetwork
from nodehost.component import FileSpec
from nodehost.daemon.workloads import launcher_script
from nodehost.plugins.runtime.registries import toml_string
from nodehost.plugins.runtime.settings import Paths

CONFIG_FILE_NAME = "containerd.toml"
SHIM_PREFIX = "containerd-shim"
LAUNCHER_DIR = "bin"
#: containerd's CRI service, which Docker's containerd packages ship disabled.
CRI_PLUGIN = "io.containerd.grpc.v1.cri"
#: What to change when a runtime endpoint answers gRPC without CRI
#: (:class:`nodehost.component.CriProbe`'s ``not_cri_hint``).
NOT_CRI_HINT = (
    "if it is a containerd with its CRI plugin disabled (as Docker's packages ship it), "
    f'remove "{CRI_PLUGIN}" from disabled_plugins in its config.toml and restart it'
)
#: containerd ends its shims' connections and exits within a few seconds of SIGTERM.
STOP_GRACE = 15.0


def render_config(
    paths: Paths,
    network: CniNetwork | None,
    cgroup_driver: str,
    sandbox_image: str,
    restrict_oom_score_adj: bool = False,
    registry: Sequence[str] = (),
) -> bytes:
    """The containerd configuration (version 2): ``paths``, network, driver, pause image,
    whether pods' ``oom_score_adj`` is kept at or above containerd's own
    (:func:`can_lower_oom_score_adj`), and the CRI ``registry`` lines."""
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
        f"  restrict_oom_score_adj = {'true' if restrict_oom_score_adj else 'false'}",
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
        *registry,
    ]
    return "\n".join(lines).encode()


#: ``CAP_SYS_RESOURCE``: needed to lower a process's ``oom_score_adj``.
CAP_SYS_RESOURCE = 24


def can_lower_oom_score_adj(status: str = "/proc/self/status") -> bool:
    """Whether this process holds ``CAP_SYS_RESOURCE`` (True when that cannot be read).

    The kubelet gives pod sandboxes ``oom_score_adj`` -998; without the
    capability (a container, a restricted VM) runc cannot set it and every
    sandbox fails to start (``can't get final child's PID from pipe``), so
    containerd is told to clamp pods' scores to its own instead.
    """
    from nodehost.fileread import PROC_LIMIT, read_text

    try:
        lines = read_text(status, PROC_LIMIT).splitlines()
        effective = next(int(line.split()[1], 16) for line in lines if line.startswith("CapEff:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return True
    return bool(effective >> CAP_SYS_RESOURCE & 1)


def _first_existing(directories: Iterable[str]) -> str:
    """containerd 1.6 takes one CNI binary directory: the first that exists, else the first."""
    directories = tuple(directories)
    for directory in directories:
        if os.path.isdir(directory):
            return directory
    return directories[0]


def containerd_argv(config_path: str, verbosity: int = 0) -> tuple[str, ...]:
    """The command line: the configuration file, and containerd's log level following
    nodehost's ``-v`` (:func:`log_level`)."""
    return ("containerd", "--config", config_path, "--log-level", log_level(verbosity))


def log_level(verbosity: int) -> str:
    """containerd's level for nodehost's ``-v``: ``warn`` by default (not its ~60 "loading
    plugin" lines on every start), ``info`` from ``-v 2``, ``debug`` from ``-v 4``."""
    from nodehost.log import DEBUG_VERBOSITY

    if verbosity >= DEBUG_VERBOSITY:
        return "debug"
    return "info" if verbosity >= INFO_VERBOSITY else "warn"


#: The ``-v`` from which containerd logs at info.
INFO_VERBOSITY = 2


def shim_programs(search_path: str) -> dict[str, str]:
    """Every ``containerd-shim*`` program on ``search_path``: name -> path (first one wins).

    A folder is listed once, however often ``search_path`` names it, directly or through
    a link (``/bin`` and ``/usr/bin`` on a merged ``/usr``): a later listing of it could
    add no name.
    """
    found: dict[str, str] = {}
    listed: set[tuple[int, int]] = set()
    for folder in search_path.split(os.pathsep):
        identity = _folder_identity(folder) if os.path.isabs(folder) else None
        if identity is None or identity in listed:
            continue
        listed.add(identity)
        for name in sorted(n for n in os.listdir(folder) if n.startswith(SHIM_PREFIX)):
            path = os.path.join(folder, name)
            if name not in found and os.access(path, os.X_OK):
                found[name] = path
    return found


def _folder_identity(folder: str) -> tuple[int, int] | None:
    """``(device, inode)`` of the folder ``folder`` leads to; ``None`` if it is none."""
    try:
        status = os.stat(folder)
    except (OSError, ValueError):
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISDIR(status.st_mode) else None


def shim_launchers(component_dir: str, search_path: str) -> tuple[tuple[FileSpec, ...], str]:
    """The shims' workload launchers in ``<component_dir>/bin``, and containerd's ``PATH``."""
    launcher_dir = os.path.join(component_dir, LAUNCHER_DIR)
    others = [
        folder for folder in search_path.split(os.pathsep) if folder and folder != launcher_dir
    ]
    files = tuple(
        FileSpec(
            os.path.join(launcher_dir, name), launcher_script(path, f"containerd's {name}"), 0o755
        )
        for name, path in shim_programs(os.pathsep.join(others)).items()
    )
    return files, os.pathsep.join([launcher_dir, *others])
