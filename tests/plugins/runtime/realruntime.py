"""Driving a real containerd in tests: ctr, a busybox root filesystem, the processes left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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


@dataclass(frozen=True)
class OciImage:
    """A one-layer busybox-static image: its blobs by digest and its manifest's descriptor."""

    blobs: dict[str, bytes]
    manifest: dict[str, Any]


def oci_image() -> OciImage:
    """busybox-static as an OCI image (one layer, ``/bin/sh`` its command)."""
    import hashlib
    import io
    import json
    import platform
    import tarfile

    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict[str, Any]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer_buffer = io.BytesIO()
    with tarfile.open(fileobj=layer_buffer, mode="w") as layer:
        layer.add(shutil.which("busybox") or "", arcname="bin/busybox")
        link = tarfile.TarInfo("bin/sh")
        link.type, link.linkname = tarfile.SYMTYPE, "busybox"
        layer.addfile(link)
    layer_data = layer_buffer.getvalue()
    architecture = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), "amd64")
    config = {
        "architecture": architecture,
        "os": "linux",
        "config": {"Cmd": ["/bin/sh"]},
        "rootfs": {
            "type": "layers",
            "diff_ids": ["sha256:" + hashlib.sha256(layer_data).hexdigest()],
        },
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": blob(json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json"),
        "layers": [blob(layer_data, "application/vnd.oci.image.layer.v1.tar")],
    }
    return OciImage(blobs, blob(json.dumps(manifest).encode(), MANIFEST_TYPE))


MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


def oci_image_tar(folder: Path, name: str = IMAGE, file_name: str = "image.tar") -> Path:
    """An OCI image layout archive of :func:`oci_image` named ``name`` (``ctr image import``)."""
    import io
    import json
    import tarfile

    image = oci_image()
    entry = dict(image.manifest)
    entry["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
    }
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode(),
        **{f"blobs/sha256/{digest[7:]}": data for digest, data in image.blobs.items()},
    }
    path = folder / file_name
    with tarfile.open(path, "w") as archive:
        for member, data in files.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


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
