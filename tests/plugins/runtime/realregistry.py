"""A real registry on loopback (Debian's ``docker-registry``), pushing to it, pulling through CRI.

* :class:`Registry` runs ``docker-registry serve CONFIG`` on a free loopback
  port, storage and log in the test's folder, optionally behind ``htpasswd``
  basic auth (a bcrypt entry made here);
* :func:`push` uploads an :class:`~realruntime.OciImage` with the registry API
  (blob uploads, then the manifest);
* :func:`cri_pull` asks a containerd for ``runtime.v1.ImageService/PullImage``
  over its socket (:class:`nodehost.testing.cri.CriClient`): the pull the kubelet
  makes, resolved through the CRI plugin's registry configuration.
"""

from __future__ import annotations

import base64
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from realruntime import MANIFEST_TYPE, OciImage

from nodehost.testing.ports import free_port

PULL_PATH = "/runtime.v1.ImageService/PullImage"


class Registry:
    """``docker-registry`` on ``127.0.0.1:<free port>``; ``url`` is its base URL."""

    def __init__(self, folder: Path, credentials: tuple[str, str] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.credentials = credentials
        self.log = folder / "registry.log"
        config = [
            "version: 0.1",
            "log: {level: info, accesslog: {disabled: false}}",
            f"storage: {{filesystem: {{rootdirectory: {folder / 'data'}}}}}",
            f"http: {{addr: 127.0.0.1:{self.port}}}",
        ]
        if credentials:
            htpasswd = folder / "htpasswd"
            htpasswd.write_text(f"{credentials[0]}:{_bcrypt(credentials[1])}\n")
            config.append(f"auth: {{htpasswd: {{realm: test, path: {htpasswd}}}}}")
        (folder / "config.yml").write_text("\n".join(config) + "\n")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                ["docker-registry", "serve", str(folder / "config.yml")], stdout=log, stderr=log
            )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"docker-registry exited: {self.log.read_text()[-2000:]}")
            if self.answers():
                return
            time.sleep(0.05)
        raise AssertionError("docker-registry did not answer /v2/")

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/v2/", timeout=2):
                return True
        except urllib.error.HTTPError as error:
            return error.code == 401
        except OSError:
            return False

    def requests(self) -> str:
        """The registry's log so far (access lines name each request)."""
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def _bcrypt(password: str) -> str:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt

    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))


def push(registry: Registry, repository: str, tag: str, image: OciImage) -> None:
    """Upload every blob of ``image``, then its manifest as ``repository:tag``."""
    for digest, data in image.blobs.items():
        if digest == image.manifest["digest"]:
            continue
        upload = _call(registry, "POST", f"/v2/{repository}/blobs/uploads/")
        location = upload.headers["Location"]
        separator = "&" if "?" in location else "?"
        target = location if location.startswith("http") else registry.url + location
        _call(registry, "PUT", f"{target}{separator}digest={digest}", data)
    manifest = image.blobs[image.manifest["digest"]]
    _call(registry, "PUT", f"/v2/{repository}/manifests/{tag}", manifest, MANIFEST_TYPE)


def _call(
    registry: Registry, method: str, target: str, body: bytes = b"", kind: str = ""
) -> urllib.response.addinfourl:
    url = target if target.startswith("http") else registry.url + target
    request = urllib.request.Request(url, data=body or None, method=method)
    if kind:
        request.add_header("Content-Type", kind)
    elif body:
        request.add_header("Content-Type", "application/octet-stream")
    if registry.credentials:
        token = base64.b64encode(":".join(registry.credentials).encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    return urllib.request.urlopen(request, timeout=30)


def cri_pull(socket: Path, image: str, timeout: float = 120.0) -> str:
    """Pull ``image`` through containerd's CRI plugin at ``socket``; the image reference.

    Raises :class:`~nodehost.daemon.grpchealth.GrpcStatusError` when the pull fails.
    """
    from nodehost.testing.cri import CriClient

    return CriClient(f"unix://{socket}", timeout).pull_image(image)
