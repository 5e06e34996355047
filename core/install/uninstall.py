"""``nodehost uninstall``: stop the service, tear the node down, remove what install wrote.

The steps run in this order, each one finding its own work done when it was
done before, so that a run interrupted anywhere is finished by the next:

1. stop the service (where systemd runs) and disable it;
2. tear the node down (:func:`nodehost.daemon.teardown.tear_down`) for the
   state directory the installed files name, under the state directory's lock;
3. unmount everything below the kubelet root (lazily when busy); its pod volume
   data is deleted only with ``purge_volumes``;
4. with ``purge``: remove the state directory and the node folder (keeping the
   kubelet root inside either unless ``purge_volumes``);
5. remove the unit and have systemd forget it (kept while stopping or disabling
   failed: the next run tries again);
6. remove the environment file -- last, and only when nothing failed, since it
   tells a second run which state directory, config and kubelet root to use.

Every step adds what it removed to :attr:`UninstallReport.removed`, what it
kept on purpose (pod volume data) to ``kept`` and what it could not do to
``failed``, each with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nodehost.daemon.teardown import TeardownReport, mounts_below, unmount_below
from nodehost.frozen import frozen
from nodehost.install import ENVIRONMENT_PATH, UNIT_NAME, UNIT_PATH
from nodehost.install.files import (
    packaged_unit,
    parse_environment,
    read_if_present,
    unit_environment,
)
from nodehost.install.systemd import systemctl, systemd_running

#: A node folder is purged only if it holds its config (never ``/etc`` by mistake).
_SHALLOWEST_PURGE = 2


@frozen
class UninstallOptions:
    """``--purge``, ``--purge-volumes`` and the teardown's grace period in seconds."""

    purge: bool = False
    purge_volumes: bool = False
    grace: float = 10.0


@dataclass
class UninstallReport:
    """What was removed (or ended); what was kept on purpose, and why; what could not be done.

    Only ``failed`` makes the uninstall incomplete (a second run finishes it).
    """

    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


@frozen
class InstalledNode:
    """The paths the installed service uses, from its unit's defaults and environment file."""

    state_dir: str
    config: str | None
    volume_dir: str | None

    @classmethod
    def read(cls) -> InstalledNode:
        from nodehost.plan import default_state_dir

        unit = read_if_present(UNIT_PATH) or packaged_unit()
        settings = unit_environment(unit)
        settings.update(parse_environment(read_if_present(ENVIRONMENT_PATH) or ""))
        return cls(
            state_dir=default_state_dir(settings.get("NODEHOST_STATE_DIR")),
            config=settings.get("NODEHOST_CONFIG"),
            volume_dir=settings.get("NODEHOST_VOLUME_DIR"),
        )


def uninstall(options: UninstallOptions) -> UninstallReport:
    """Run the steps of the module docstring; see :class:`UninstallReport`.

    Where neither the unit nor the environment file exists nodehost is not
    installed (or fully uninstalled): nothing is done, not even a teardown of
    the default state directory.
    """
    report = UninstallReport()
    if not os.path.lexists(UNIT_PATH) and not os.path.lexists(ENVIRONMENT_PATH):
        return report
    node = InstalledNode.read()
    _stop_service(report)
    stopped = not report.failed
    _tear_down(node.state_dir, options.grace, report)
    volume_directory = _volume_directory(node, report)
    if volume_directory is not None:
        _unmount_volumes(volume_directory, options.purge_volumes, report)
    if options.purge:
        keep = None if options.purge_volumes else volume_directory
        _purge(node.state_dir, keep, report)
        if node.config is not None:
            _purge_node_folder(node.config, keep, report)
    if stopped:
        _remove_unit(report)
    else:
        report.kept.append(f"{UNIT_PATH}: kept until the service is stopped (run it again)")
    _remove_environment_file(report)
    return report


def _stop_service(report: UninstallReport) -> None:
    if not os.path.lexists(UNIT_PATH):
        return
    if systemd_running():
        failure = systemctl("stop", UNIT_NAME)
        if failure is None:
            report.removed.append(f"stopped {UNIT_NAME}")
        else:
            report.failed.append(f"{UNIT_NAME} may still run: {failure}")
    failure = systemctl("disable", UNIT_NAME)
    if failure is None:
        report.removed.append(f"disabled {UNIT_NAME}")
    else:
        report.failed.append(f"{UNIT_NAME} may still be enabled: {failure}")


def _tear_down(state_dir: str, grace: float, report: UninstallReport) -> None:
    from nodehost.daemon.pidfiles import StateLock
    from nodehost.daemon.teardown import tear_down
    from nodehost.errors import RuntimeFailure

    if not os.path.isdir(state_dir):
        return
    lock = StateLock(state_dir)
    try:
        lock.acquire()
    except RuntimeFailure as error:
        report.failed.append(f"did not tear the node down: {error}")
        return
    try:
        done = asyncio.run(tear_down(state_dir, grace))
    finally:
        lock.release()
    report.removed.extend(done.done)
    report.failed.extend(done.left)


def _volume_directory(node: InstalledNode, report: UninstallReport) -> str | None:
    """The config's ``volumeDirectory`` (else ``NODEHOST_VOLUME_DIR`` if absolute)."""
    from nodehost.errors import ConfigError

    if node.config is not None and os.path.isfile(node.config):
        from nodehost.config.load import load_node_config

        try:
            config, _ = load_node_config(node.config)
        except ConfigError as error:
            report.failed.append(f"could not read the kubelet root from {node.config}: {error}")
        else:
            if config.volume_directory:
                return os.path.abspath(config.volume_directory)
    if node.volume_dir and os.path.isabs(node.volume_dir):
        return node.volume_dir
    return None


def _unmount_volumes(volume_directory: str, purge_volumes: bool, report: UninstallReport) -> None:
    unmounted = TeardownReport()
    unmount_below(volume_directory, unmounted)
    report.removed.extend(unmounted.done)
    report.failed.extend(unmounted.left)
    if not os.path.isdir(volume_directory):
        return
    if not purge_volumes:
        report.kept.append(
            f"pod volume data in {volume_directory}: kept (--purge-volumes deletes it)"
        )
        return
    _remove_tree(volume_directory, None, report)


def _purge(folder: str, keep: str | None, report: UninstallReport) -> None:
    if not os.path.lexists(folder):
        return
    if len(Path(folder).parts) <= _SHALLOWEST_PURGE:
        report.kept.append(f"{folder}: kept (too close to / to remove wholesale)")
        return
    _remove_tree(folder, keep, report)


def _purge_node_folder(config: str, keep: str | None, report: UninstallReport) -> None:
    folder = os.path.dirname(os.path.abspath(config))
    if not os.path.isdir(folder):
        return
    if not os.path.lexists(config):
        report.kept.append(f"node folder {folder}: kept (it does not hold {config})")
        return
    _purge(folder, keep, report)


def _remove_tree(folder: str, keep: str | None, report: UninstallReport) -> None:
    """Remove ``folder`` (all but ``keep`` and its parents when ``keep`` is inside it).

    Nothing is removed while something is mounted below ``folder``: removing
    through a mount would delete what the mount shows.
    """
    mounted = mounts_below(folder)
    if mounted:
        report.failed.append(f"{folder}: kept (still mounted below it: {', '.join(mounted)})")
        return
    inside = keep is not None and _is_within(keep, folder)
    try:
        if inside and keep is not None:
            _remove_all_but(Path(folder), Path(keep))
        else:
            shutil.rmtree(folder)
    except OSError as error:
        report.failed.append(f"{folder}: could not remove all of it ({error.strerror or error})")
        return
    if inside:
        report.removed.append(f"removed {folder} (all but the pod volume data in {keep})")
    else:
        report.removed.append(f"removed {folder}")


def _remove_all_but(folder: Path, keep: Path) -> None:
    """Remove everything in ``folder`` except ``keep`` (below it) and the folders leading there."""
    for entry in os.scandir(folder):
        path = Path(entry.path)
        if path == keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            if _is_within(str(keep), str(path)):
                _remove_all_but(path, keep)
            else:
                shutil.rmtree(path)
        else:
            path.unlink()


def _is_within(path: str, folder: str) -> bool:
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
    return not relative.startswith("..")


def _remove_unit(report: UninstallReport) -> None:
    if not os.path.lexists(UNIT_PATH):
        return
    try:
        os.unlink(UNIT_PATH)
    except OSError as error:
        report.failed.append(f"{UNIT_PATH}: could not remove it ({error.strerror})")
        return
    report.removed.append(f"removed {UNIT_PATH}")
    if systemd_running():
        failure = systemctl("daemon-reload")
        if failure is not None:
            report.failed.append(f"systemd may still know {UNIT_NAME}: {failure}")


def _remove_environment_file(report: UninstallReport) -> None:
    if not os.path.lexists(ENVIRONMENT_PATH):
        return
    if report.failed:
        report.kept.append(
            f"{ENVIRONMENT_PATH}: kept until the rest is done (a second "
            "'nodehost uninstall' reads the state directory and config from it)"
        )
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ENVIRONMENT_PATH)
    report.removed.append(f"removed {ENVIRONMENT_PATH}")
