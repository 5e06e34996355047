"""Acting as the kubelet over CRI in tests: pods, containers, exec, and an image to run.

The product asks a runtime only ``Version`` and ``Status``
(:mod:`nodehost.daemon.cri`); a test that proves a node can run pods needs
the calls the kubelet makes to run one, and they live here:
:class:`CriClient` (``RunPodSandbox``, ``PodSandboxStatus``,
``CreateContainer``, ``StartContainer``, ``ExecSync``, ``StopPodSandbox``,
``RemovePodSandbox``, ``ListPodSandbox``, ``ListContainers``,
``ImageStatus``), each one unary call through
:func:`nodehost.daemon.cri.call` with the request encoded by
:mod:`nodehost.api.protowire` (field numbers of CRI's ``runtime.v1``
``api.proto``), :func:`image_archive`: an OCI image archive of
busybox-static for ``ctr -n k8s.io images import`` (no registry needed).  A
containerd of the test's own is the runtime plugin's
(:func:`nodehost.plugins.runtime.testing.own_containerd`).

Blocking methods (each runs its own event loop) so that tests read plainly;
a non-OK gRPC status raises :class:`nodehost.daemon.grpchealth.GrpcStatusError`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodehost.api.protowire import encode_field, encode_map, encode_message, fields
from nodehost.daemon.cri import RUNTIME_SERVICE, CriAuth, call, image_present, pull_image

#: ``PodSandboxState`` / ``ContainerState`` values.
CALL_TIMEOUT = 60.0


@dataclass(frozen=True)
class PodSpec:
    """What the kubelet puts in a ``PodSandboxConfig`` (the parts tests use)."""

    name: str
    namespace: str = "default"
    uid: str = ""
    hostname: str = ""
    dns_servers: tuple[str, ...] = ()
    dns_searches: tuple[str, ...] = ()
    dns_options: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    cgroup_parent: str = ""
    log_directory: str = ""

    def encode(self) -> bytes:
        """``PodSandboxConfig``."""
        metadata = encode_message((1, self.name), (2, self.uid or self.name), (3, self.namespace))
        dns = b"".join(
            [
                *(encode_field(1, server) for server in self.dns_servers),
                *(encode_field(2, search) for search in self.dns_searches),
                *(encode_field(3, option) for option in self.dns_options),
            ]
        )
        linux = encode_message((1, self.cgroup_parent))
        return b"".join(
            [
                encode_field(1, metadata),
                encode_message((2, self.hostname), (3, self.log_directory)),
                encode_field(4, dns) if dns else b"",
                encode_map(6, dict(self.labels)),
                encode_field(8, linux) if linux else b"",
            ]
        )


@dataclass(frozen=True)
class ContainerSpec:
    """What the kubelet puts in a ``ContainerConfig`` (the parts tests use)."""

    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    log_path: str = ""

    def encode(self) -> bytes:
        """``ContainerConfig``."""
        return b"".join(
            [
                encode_field(1, encode_message((1, self.name))),
                encode_field(2, encode_message((1, self.image))),
                *(encode_field(3, part) for part in self.command),
                *(encode_field(4, part) for part in self.args),
                encode_message((11, self.log_path)),
            ]
        )


@dataclass(frozen=True)
class ExecResult:
    stdout: str
    stderr: str
    exit_code: int


class CriClient:
    """The kubelet's side of CRI on ``endpoint`` (``unix:///...``), one blocking call per method."""

    def __init__(self, endpoint: str, timeout: float = CALL_TIMEOUT) -> None:
        self.endpoint = endpoint
        self.timeout = timeout

    def _call(self, method: str, request: bytes, service: str = RUNTIME_SERVICE) -> bytes:
        return asyncio.run(call(self.endpoint, service, method, request, self.timeout))

    def run_pod_sandbox(self, pod: PodSpec) -> str:
        """``RunPodSandbox``: the sandbox's id (its network set up by the runtime's CNI)."""
        answer = self._call("RunPodSandbox", encode_field(1, pod.encode()))
        return _text(answer, 1)

    def pod_sandbox_status(self, sandbox: str) -> dict[str, Any]:
        """``PodSandboxStatus`` (verbose): ``id``, ``state``, ``ip``, and ``info`` (the
        runtime's JSON: containerd's holds the runtime spec with the network namespace)."""
        answer = self._call("PodSandboxStatus", encode_message((1, sandbox), (2, True)))
        status = _message(answer, 1)
        network = _message(status, 5)
        info = {_text(entry, 1): _text(entry, 2) for number, entry in fields(answer) if number == 2}  # type: ignore[arg-type]
        return {
            "id": _text(status, 1),
            "state": _int(status, 3),
            "ip": _text(network, 1),
            "info": json.loads(info["info"]) if "info" in info else {},
        }

    def create_container(self, sandbox: str, container: ContainerSpec, pod: PodSpec) -> str:
        request = b"".join(
            [
                encode_field(1, sandbox),
                encode_field(2, container.encode()),
                encode_field(3, pod.encode()),
            ]
        )
        return _text(self._call("CreateContainer", request), 1)

    def start_container(self, container: str) -> None:
        self._call("StartContainer", encode_message((1, container)))

    def exec_sync(self, container: str, command: Sequence[str], timeout: int = 30) -> ExecResult:
        request = encode_field(1, container) + b"".join(encode_field(2, c) for c in command)
        answer = self._call("ExecSync", request + encode_message((3, timeout)))
        return ExecResult(_text(answer, 1), _text(answer, 2), _int(answer, 3))

    def stop_pod_sandbox(self, sandbox: str) -> None:
        self._call("StopPodSandbox", encode_message((1, sandbox)))

    def remove_pod_sandbox(self, sandbox: str) -> None:
        self._call("RemovePodSandbox", encode_message((1, sandbox)))

    def list_pod_sandboxes(self) -> list[str]:
        """The ids of every sandbox the runtime keeps."""
        answer = self._call("ListPodSandbox", b"")
        return [_text(item, 1) for number, item in fields(answer) if number == 1]  # type: ignore[arg-type]

    def list_containers(self) -> list[str]:
        answer = self._call("ListContainers", b"")
        return [_text(item, 1) for number, item in fields(answer) if number == 1]  # type: ignore[arg-type]

    def pull_image(self, image: str, auth: CriAuth | None = None) -> str:
        """``PullImage`` as the kubelet asks it (the runtime's registry configuration applies:
        mirrors, credentials); the image reference the runtime stored."""
        return asyncio.run(pull_image(self.endpoint, image, auth, self.timeout))

    def image_present(self, image: str) -> bool:
        """``ImageStatus``: whether the runtime has ``image`` (no pull)."""
        return asyncio.run(image_present(self.endpoint, image, self.timeout))


def _message(data: bytes, number: int) -> bytes:
    """The last length-delimited field ``number`` (a nested message), b"" if absent."""
    found = b""
    for key, value in fields(data):
        if key == number and isinstance(value, bytes):
            found = value
    return found


def _text(data: bytes, number: int) -> str:
    return _message(data, number).decode(errors="replace")


def _int(data: bytes, number: int) -> int:
    found = 0
    for key, value in fields(data):
        if key == number and isinstance(value, int):
            found = value
    return found


#: The media type of an OCI image manifest.
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True)
class OciImage:
    """A one-layer busybox-static image: its blobs by digest and its manifest's descriptor
    (what a registry push sends, what an image archive holds)."""

    blobs: dict[str, bytes]
    manifest: dict[str, Any]


def oci_image(command: Sequence[str] = ("/bin/sh",), platform_arch: str = "") -> OciImage:
    """busybox-static (``/bin/busybox``, ``/bin/sh``) as an OCI image, ``command`` its ``Cmd``,
    for this machine's architecture unless ``platform_arch`` names another."""
    import hashlib
    import io
    import platform
    import shutil
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
    machine = platform.machine()
    architecture = platform_arch or {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, "amd64")
    config = {
        "architecture": architecture,
        "os": "linux",
        "config": {"Cmd": list(command)},
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


def image_archive(
    path: Path, name: str, command: Sequence[str] = ("/bin/sh",), platform_arch: str = ""
) -> Path:
    """Write :func:`oci_image` named ``name`` as an OCI image layout archive at ``path``, for
    ``ctr images import``."""
    import io
    import tarfile

    image = oci_image(command, platform_arch)
    entry = dict(image.manifest)
    entry["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name.rpartition(":")[2],
    }
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps({"schemaVersion": 2, "manifests": [entry]}).encode(),
        **{f"blobs/sha256/{digest[7:]}": data for digest, data in image.blobs.items()},
    }
    with tarfile.open(path, "w") as archive:
        for file_name, data in files.items():
            info = tarfile.TarInfo(file_name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path
