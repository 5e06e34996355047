"""Driving a real containerd in tests: ctr, a busybox root filesystem, the processes left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.testing.cri import MANIFEST_TYPE as MANIFEST_TYPE
from nodehost.testing.cri import OciImage as OciImage
from nodehost.testing.cri import image_archive
from nodehost.testing.cri import oci_image as oci_image
from nodehost.testing.wait import wait_for as wait_for

NODEHOST = os.path.join(os.path.dirname(sys.executable), "nodehost")
NAMESPACE = "nodehost-test"

needs_containerd = pytest.mark.needs("root", "containerd", "busybox")


def managed_pids(state_dir: Path) -> list[int]:
    """Processes whose environment marks them as this state directory's (containerd, shims)."""
    marker = f"NODEHOST_MANAGED={state_dir}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            pids.append(int(entry))
    return pids


def busybox_rootfs(folder: Path) -> Path:
    """A root filesystem of busybox-static: /bin/busybox and /bin/sh."""
    rootfs = folder / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    shutil.copy2(shutil.which("busybox") or "", rootfs / "bin" / "busybox")
    os.symlink("busybox", rootfs / "bin" / "sh")
    return rootfs


def ctr(socket: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", "--address", str(socket), "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


IMAGE = "docker.io/library/nodehost-test:latest"


def oci_image_tar(folder: Path, name: str = IMAGE, file_name: str = "image.tar") -> Path:
    """:func:`nodehost.testing.cri.image_archive` of busybox-static named ``name`` in ``folder``."""
    return image_archive(folder / file_name, name)


def task_pids(socket: Path) -> dict[str, tuple[int, str]]:
    """``ctr task ls``: container id -> (pid, status)."""
    listing = ctr(socket, "task", "ls")
    assert listing.returncode == 0, listing.stderr
    rows = [line.split() for line in listing.stdout.splitlines()[1:] if line.strip()]
    return {row[0]: (int(row[1]), row[2]) for row in rows}


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
