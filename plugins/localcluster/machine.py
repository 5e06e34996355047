"""What of the whole node can run for real on this machine, and why not when it cannot.

Read once per start, without side effects (``--dry-run`` asks too):

* the **bridge network** needs root (it creates a bridge and veth pairs) and
  the CNI plugins the ``bridge`` provider runs (``bridge``, ``portmap``,
  ``host-local``, ``loopback``) in the default CNI binary directories;
* the **container runtime** (containerd) needs root and both ``containerd``
  and ``runc`` on ``PATH``.

Each "cannot" comes with one sentence that says why and what to do, which
the local cluster prints once, as a warning.
"""

from __future__ import annotations

import os

from nodehost.binaries import which
from nodehost.frozen import frozen

#: The CNI plugins the built-in ``bridge`` provider needs (its conflist and the pods' ``lo``).
BRIDGE_PLUGINS = ("bridge", "portmap", "host-local", "loopback")
RUNTIME_PROGRAMS = ("containerd", "runc")


@frozen
class Machine:
    """The facts about this machine the local cluster's choices rest on."""

    root: bool
    missing_cni_plugins: tuple[str, ...]
    cni_bin_dirs: tuple[str, ...]
    missing_programs: tuple[str, ...]

    @classmethod
    def probe(cls) -> Machine:
        from nodehost.cni.plugins import DEFAULT_BIN_DIRS, missing_plugins

        return cls(
            root=os.geteuid() == 0,
            missing_cni_plugins=tuple(missing_plugins(BRIDGE_PLUGINS, DEFAULT_BIN_DIRS)),
            cni_bin_dirs=DEFAULT_BIN_DIRS,
            missing_programs=tuple(p for p in RUNTIME_PROGRAMS if which(p) is None),
        )

    def no_bridge_reason(self) -> str | None:
        """Why the bridge network cannot run here (None: it can)."""
        if not self.root:
            return (
                "not running as root: no bridge network (sdn is inactive); a bridge and its "
                "veth pairs need root -- run as root with the CNI plugins installed"
            )
        if self.missing_cni_plugins:
            return (
                f"the CNI plugins {', '.join(self.missing_cni_plugins)} are not in "
                f"{', '.join(self.cni_bin_dirs)}: no bridge network (sdn is inactive); "
                "apt-get install containernetworking-plugins"
            )
        return None

    def no_runtime_reason(self) -> str | None:
        """Why containerd cannot run here (None: it can)."""
        if not self.root:
            return (
                "not running as root: no container runtime (runtime is left out); "
                "containerd needs root"
            )
        if self.missing_programs:
            return (
                f"{' and '.join(self.missing_programs)} not found on PATH: no container runtime "
                "(runtime is left out); apt-get install containerd runc"
            )
        return None
