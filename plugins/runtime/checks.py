"""The container runtime's host checks (``nodehost_checks``).

For a managed containerd:

* ``runtime.containerd`` (not in the preflight) -- the program and its version;
* ``runtime.runc`` -- ``runc`` on containerd's ``PATH`` (its version outside
  the preflight): without it containerd starts but no pod does;
* ``runtime.overlayfs`` -- the file system of containerd's default
  snapshotter, registered or loadable as a module;
* ``runtime.systemd-cgroup`` -- runc's ``SystemdCgroup`` (the ``systemd``
  cgroup driver) needs systemd as PID 1;
* ``runtime.space-root`` -- free space of containerd's root against the
  kubelet's ``imagefs.available`` eviction threshold.

Outside the preflight, ``runtime.mirror.<HOST>`` for each mirrored registry
(:func:`mirror_checks`): whether each of its endpoints answers ``/v2/``, asked
with that endpoint's TLS settings and credentials; a mirror that does not
answer (or refuses the credentials) is a warning naming it -- pulls go on to the
next endpoint and the registry itself.

For an external runtime, ``runtime.cri`` (:func:`cri_check`): the endpoint
answers CRI ``Version`` and ``Status`` with ``RuntimeReady`` (not in the
preflight: the start waits for it anyway).  With a stand-in containerd the host checks are
skipped, saying so.
"""

from __future__ import annotations

import os
import platform
from typing import TYPE_CHECKING, Any

from nodehost.binaries import which
from nodehost.check import Check, CheckContext
from nodehost.plugins.runtime.settings import SECTION, read_settings

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.plugins.runtime.registries import Registries

NAME = "runtime"
DEFAULT_IMAGEFS_AVAILABLE = "15%"
#: Seconds each CRI call of ``runtime.cri`` may take.
CRI_TIMEOUT = 5.0
#: Seconds each mirror endpoint may take to answer ``/v2/``.
MIRROR_TIMEOUT = 5.0


def runtime_checks(context: CheckContext) -> list[Check]:
    """The checks above, for the selected, active runtime (the hook asks only then)."""
    settings, _ = read_settings(context.config)
    if settings.external is not None:
        cri = cri_check(context, settings.external.socket)
        return [cri] if cri is not None else []
    program = context.program(NAME)
    if program is not None and program[1]:
        why = "containerd is a stand-in (--standins): only a real one needs this of the host"
        return [Check.skipped(f"{NAME}.host", why)]
    root = settings.paths(os.path.join(context.plan.state_dir, NAME)).root
    found = [
        runc_check(with_version=not context.preflight),
        overlayfs_check(),
        systemd_cgroup_check(settings.cgroup_driver),
        space_check(root, _imagefs_threshold(context.config)),
    ]
    if not context.preflight:
        found.insert(0, containerd_check(program))
        found.extend(mirror_checks(settings.registries))
    return found


def mirror_checks(registries: Registries, timeout: float = MIRROR_TIMEOUT) -> list[Check]:
    """``runtime.mirror.<HOST>``: one line per mirrored registry saying how each endpoint
    answered ``/v2/``; a warning naming those that did not."""
    from nodehost.plugins.runtime.registries import probe_mirrors

    answers = probe_mirrors(registries, timeout)
    checks = []
    for host, _ in registries.mirrors:
        mine = [answer for answer in answers if answer.registry == host]
        found = "; ".join(f"{answer.endpoint} {answer.detail}" for answer in mine)
        silent = [answer.endpoint for answer in mine if not answer.ok]
        name = f"{NAME}.mirror.{host}"
        if silent:
            fix = (
                f"start or reach {', '.join(silent)}, or fix "
                f"{SECTION}.registries.mirrors.{host} / configs (pulls skip it meanwhile)"
            )
            checks.append(Check.warning(name, found, fix))
        else:
            checks.append(Check.ok(name, found))
    return checks


def cri_check(context: CheckContext, socket: str) -> Check | None:
    """``runtime.cri``: the external endpoint ``socket`` answers CRI ``Version`` and
    ``Status`` with ``RuntimeReady`` (``nodehost check`` only: the start waits for it
    anyway, and the preflight asks nothing of other processes)."""
    if context.preflight:
        return None
    import asyncio

    from nodehost.daemon.cri import runtime_status
    from nodehost.daemon.grpchealth import HealthCheckError
    from nodehost.plugins.runtime.containerd import NOT_CRI_HINT

    name = f"{NAME}.cri"
    endpoint = socket if socket.startswith("unix://") else f"unix://{socket}"
    try:
        status = asyncio.run(runtime_status(endpoint, CRI_TIMEOUT, not_cri_hint=NOT_CRI_HINT))
    except (OSError, TimeoutError, HealthCheckError, ValueError) as error:
        found = f"{endpoint}: {error or type(error).__name__}"
        return Check.error(name, found, f"start the runtime at {endpoint}, or fix {SECTION}")
    if not status.runtime_ready:
        return Check.error(name, status.summary(), "see the runtime's own log for why")
    return Check.ok(name, status.summary())


def containerd_check(program: tuple[str, bool] | None) -> Check:
    from nodehost.check.programs import program_version

    name = f"{NAME}.containerd"
    if program is None:
        return Check.skipped(name, "containerd is not planned (see the plan line)")
    try:
        return Check.ok(name, f"{program[0]}: {program_version(program[0])}")
    except OSError as error:
        return Check.error(name, str(error), "install containerd, or --binary containerd=PATH")


def runc_check(*, with_version: bool) -> Check:
    name = f"{NAME}.runc"
    path = which("runc")
    if path is None:
        return Check.error(
            name,
            "runc is not on PATH: containerd starts, but no container does",
            "install runc (apt-get install runc)",
        )
    if not with_version:
        return Check.ok(name, path)
    from nodehost.check.programs import program_version

    try:
        return Check.ok(name, f"{path}: {program_version(path)}")
    except OSError as error:
        return Check.error(name, str(error), "reinstall runc")


def overlayfs_check(filesystems: str = "/proc/filesystems", modules: str = "/lib/modules") -> Check:
    """overlay registered, or its module present for the kernel to load on the first mount."""
    name = f"{NAME}.overlayfs"
    try:
        with open(filesystems) as file:
            registered = any(line.split()[-1:] == ["overlay"] for line in file)
    except OSError as error:
        return Check.skipped(name, f"cannot read {filesystems}: {error.strerror}")
    if registered:
        return Check.ok(name, "overlay is registered")
    folder = os.path.join(modules, platform.release(), "kernel", "fs", "overlayfs")
    if os.path.isdir(folder):
        return Check.ok(name, f"overlay is not loaded yet; its module is in {folder}")
    return Check.error(
        name,
        "overlay is neither registered nor a module of this kernel: containerd's "
        "default snapshotter cannot run containers",
        "modprobe overlay, or a kernel with CONFIG_OVERLAY_FS",
    )


def systemd_cgroup_check(driver: str) -> Check:
    name = f"{NAME}.systemd-cgroup"
    systemd = os.path.isdir("/run/systemd/system")
    setting = "SystemdCgroup = " + ("true" if driver == "systemd" else "false")
    if driver == "systemd" and not systemd:
        return Check.error(
            name,
            f"{setting} (cgroup driver systemd), but systemd is not PID 1",
            f"set {SECTION}.cgroupDriver: cgroupfs",
        )
    return Check.ok(name, f"{setting}; systemd is {'' if systemd else 'not '}PID 1")


def space_check(root: str, threshold: str) -> Check:
    from nodehost.check.space import space_of

    name = f"{NAME}.space-root"
    try:
        space = space_of(root)
    except OSError as error:
        return Check.skipped(name, f"cannot measure {root}: {error.strerror}")
    if space.at_or_below(threshold):
        return Check.error(
            name,
            f"{space.describe()}: at the kubelet's eviction threshold "
            f"imagefs.available<{threshold}",
            f"free space on {space.measured}, or move {SECTION}.root",
        )
    return Check.ok(name, space.describe())


def _imagefs_threshold(config: Any) -> str:
    """``imagefs.available`` of ``kubeletArguments.eviction-hard``, else the kubelet's default."""
    from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

    given = config.kubelet_arguments.get("eviction-hard") or []
    values = KUBELET_FLAGS.resolve({"eviction-hard": given}).values if given else {}
    thresholds = values["eviction-hard"].config() if "eviction-hard" in values else {}
    return str(thresholds.get("imagefs.available") or DEFAULT_IMAGEFS_AVAILABLE)
