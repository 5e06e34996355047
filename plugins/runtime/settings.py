"""The container runtime's settings: the ``containerRuntime`` section and what the kubelet says.

::

    containerRuntime:
      endpoint: unix:///run/crio/crio.sock  # an external runtime: nodehost runs none, waits for it
      waitTimeout: 2m                       # how long to wait for an external runtime's socket
      paths: state                          # state (default): under <state-dir>/runtime
                                            # standard: /var/lib/containerd, /run/containerd, ...
      root: /var/lib/containerd             # each path may also be given alone (absolute)
      state: /run/containerd
      socket: /run/containerd/containerd.sock
      cgroupDriver: cgroupfs                # systemd or cgroupfs; default: the kubelet's
                                            # cgroup-driver argument, else systemd when systemd
                                            # is PID 1 and cgroupfs when it is not
      registries: {mirrors: ..., configs: ...}  # registry mirrors, TLS, credentials
                                                # (:mod:`.registries`)
      proxy: {httpProxy: ..., httpsProxy: ..., noProxy: ...}  # containerd's only (:mod:`.proxy`)
      imageArchives: /srv/images            # archives imported before the kubelet starts
                                            # (default <state-dir>/images; :mod:`.images`)

The runtime is *external* when ``containerRuntime.endpoint`` is set, else when
``kubeletArguments`` name a ``container-runtime-endpoint``, else when
``dockerConfig.dockerShimSocket`` is not Origin's default: then nodehost
starts no containerd and the ``runtime`` component waits for that socket.
"""

from __future__ import annotations

import os
from dataclasses import field
from typing import Any

from nodehost.config.defaults import is_default_docker_shim_socket
from nodehost.config.sections import SectionReader, section_schema
from nodehost.frozen import frozen
from nodehost.plugins.runtime import proxy as runtime_proxy
from nodehost.plugins.runtime import registries as registry

SECTION = "containerRuntime"
CGROUP_DRIVERS = ("systemd", "cgroupfs")
PATH_MODES = ("state", "standard")
DEFAULT_WAIT = "2m"
#: containerd refuses socket paths over 104 bytes (its portable limit), and it also
#: listens on ``<socket>.ttrpc``, the longer of the two.
MAX_SOCKET_PATH = 104

SCHEMA = section_schema(
    "The container runtime: containerd run by nodehost, or an external runtime's socket.",
    {
        "endpoint": {
            "type": "string",
            "pattern": "^unix:///",
            "description": "An external runtime's socket (unix:///path.sock): run no "
            "containerd, wait for it.",
        },
        "waitTimeout": {
            "type": "string",
            "default": DEFAULT_WAIT,
            "description": "How long to wait for an external runtime before logging an error "
            "(Go duration).",
        },
        "paths": {
            "enum": list(PATH_MODES),
            "default": "state",
            "description": "containerd's folders under the state directory, or the standard ones.",
        },
        "root": {"type": "string", "description": "containerd's root (absolute)."},
        "state": {"type": "string", "description": "containerd's state folder (absolute)."},
        "socket": {
            "type": "string",
            "description": f"containerd's socket (absolute, at most {MAX_SOCKET_PATH} bytes).",
        },
        "cgroupDriver": {
            "enum": list(CGROUP_DRIVERS),
            "description": "runc's cgroup driver (default: the kubelet's, else systemd when it "
            "is PID 1).",
        },
        registry.KEY: registry.SCHEMA,
        runtime_proxy.KEY: runtime_proxy.SCHEMA,
        "imageArchives": {
            "type": "string",
            "description": "A folder of image archives (docker save, OCI layout; *.tar) imported "
            "before the kubelet starts (absolute; default <state-dir>/images).",
        },
    },
)
TTRPC_SUFFIX = ".ttrpc"

STANDARD_ROOT = "/var/lib/containerd"
STANDARD_STATE = "/run/containerd"
STANDARD_SOCKET = "/run/containerd/containerd.sock"
STANDARD_OPT = "/opt/containerd"


@frozen
class External:
    """An external runtime: its unix socket and where the config names it."""

    socket: str
    source: str
    wait_timeout: float

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"


@frozen
class Paths:
    """Where a managed containerd keeps its data, state, sockets and opt plugins."""

    root: str
    state: str
    socket: str
    opt: str

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"


@frozen
class RuntimeSettings:
    """The runtime's settings; ``external`` None means nodehost runs containerd itself."""

    external: External | None
    path_mode: str
    root: str | None
    state: str | None
    socket: str | None
    cgroup_driver: str
    registries: registry.Registries = field(default_factory=registry.Registries)
    proxy: runtime_proxy.Proxy = field(default_factory=runtime_proxy.Proxy)
    image_archives: str | None = None

    def paths(self, component_dir: str) -> Paths:
        """The managed runtime's paths; ``component_dir`` is ``<state-dir>/runtime``."""
        if self.path_mode == "standard":
            defaults = Paths(STANDARD_ROOT, STANDARD_STATE, STANDARD_SOCKET, STANDARD_OPT)
        else:
            defaults = Paths(
                os.path.join(component_dir, "root"),
                os.path.join(component_dir, "state"),
                os.path.join(component_dir, "containerd.sock"),
                os.path.join(component_dir, "opt"),
            )
        return Paths(
            self.root or defaults.root,
            self.state or defaults.state,
            self.socket or defaults.socket,
            defaults.opt,
        )


def read_settings(config: Any) -> tuple[RuntimeSettings, SectionReader]:
    """The settings from ``config``, and the reader holding every problem found."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    endpoint = reader.text("endpoint")
    wait = reader.duration("waitTimeout", DEFAULT_WAIT)
    mode = reader.choice("paths", PATH_MODES, "state")
    root, state, socket = (reader.absolute_path(key) for key in ("root", "state", "socket"))
    driver = reader.choice("cgroupDriver", CGROUP_DRIVERS)
    registries = registry.read_registries(reader)
    proxy = runtime_proxy.read_proxy(reader, os.environ)
    archives = reader.absolute_path("imageArchives")
    reader.unknown_keys()
    external = _external(reader, config, endpoint, wait)
    if socket and len(socket) > MAX_SOCKET_PATH:
        reader.invalid("socket", socket, f"longer than {MAX_SOCKET_PATH} bytes")
    settings = RuntimeSettings(
        external=external,
        path_mode=mode,
        root=root,
        state=state,
        socket=socket,
        cgroup_driver=driver or kubelet_cgroup_driver(config) or host_cgroup_driver(),
        registries=registries,
        proxy=proxy,
        image_archives=archives,
    )
    return settings, reader


def _external(
    reader: SectionReader, config: Any, endpoint: str | None, wait: float
) -> External | None:
    if endpoint is not None:
        socket = unix_socket(endpoint)
        if socket is None:
            reader.invalid("endpoint", endpoint, "must be unix:///absolute/path.sock")
            return None
        return External(socket, f"{SECTION}.endpoint", wait)
    kubelet = config.kubelet_arguments.get("container-runtime-endpoint") or []
    if kubelet:
        socket = unix_socket(kubelet[-1])
        return (
            External(socket, "kubeletArguments.container-runtime-endpoint", wait)
            if (socket)
            else None
        )
    shim = config.docker_config.docker_shim_socket
    if shim and not is_default_docker_shim_socket(shim):
        socket = unix_socket(shim)
        return External(socket, "dockerConfig.dockerShimSocket", wait) if socket else None
    return None


def unix_socket(endpoint: str) -> str | None:
    """The absolute socket path of ``unix:///path`` (or a bare absolute path); else None."""
    path = endpoint[len("unix://") :] if endpoint.startswith("unix://") else endpoint
    return os.path.normpath(path) if os.path.isabs(path) else None


def kubelet_cgroup_driver(config: Any) -> str | None:
    """The ``cgroup-driver`` that ``kubeletArguments`` give, if any."""
    values = config.kubelet_arguments.get("cgroup-driver") or []
    return values[-1] if values and values[-1] in CGROUP_DRIVERS else None


def host_cgroup_driver() -> str:
    """``systemd`` if systemd is PID 1 (/run/systemd/system exists), else ``cgroupfs``."""
    return "systemd" if os.path.isdir("/run/systemd/system") else "cgroupfs"
