"""A real registry on loopback (Debian's ``docker-registry``), pushing to it, pulling through CRI.

* :class:`Registry` runs ``docker-registry serve CONFIG`` on a free loopback
  port, storage and log in the test's folder, optionally behind ``htpasswd``
  basic auth (a bcrypt entry made here);
* :class:`TokenIssuer` is the token server of a registry run with token
  auth (``Registry(..., tokens=issuer)``): it checks Basic credentials and
  issues JWTs (RS256, ``x5c`` chain: the registry verifies them against the
  issuer's certificate) for the scope asked, remembering each scope;
* :func:`push` uploads an :class:`~realruntime.OciImage` with the registry API
  (blob uploads, then the manifest);
* :func:`cri_pull` asks a containerd for ``runtime.v1.ImageService/PullImage``
  over its socket (:class:`nodehost.testing.cri.CriClient`): the pull the kubelet
  makes, resolved through the CRI plugin's registry configuration.
"""

from __future__ import annotations

import base64
import json
import re
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

    def __init__(
        self,
        folder: Path,
        credentials: tuple[str, str] | None = None,
        tokens: TokenIssuer | None = None,
    ) -> None:
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
        self.tokens = tokens
        if tokens:
            bundle = folder / "token-ca.pem"
            bundle.write_bytes(tokens.certificate_pem)
            config.append(
                f"auth: {{token: {{realm: {tokens.url}, service: {tokens.service}, "
                f"issuer: {tokens.issuer}, rootcertbundle: {bundle}}}}}"
            )
        elif credentials:
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
    if registry.tokens:
        repository = re.search(r"/v2/(.+?)/(?:blobs|manifests)/", target).group(1)  # type: ignore[union-attr]
        scope = f"repository:{repository}:push,pull"
        request.add_header("Authorization", f"Bearer {registry.tokens.token(scope)}")
    elif registry.credentials:
        token = base64.b64encode(":".join(registry.credentials).encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    return urllib.request.urlopen(request, timeout=30)


def cri_pull(socket: Path, image: str, timeout: float = 120.0) -> str:
    """Pull ``image`` through containerd's CRI plugin at ``socket``; the image reference.

    Raises :class:`~nodehost.daemon.grpchealth.GrpcStatusError` when the pull fails.
    """
    from nodehost.testing.cri import CriClient

    return CriClient(f"unix://{socket}", timeout).pull_image(image)


class TokenIssuer:
    """A registry token server on a free loopback port (``url``, served from a thread).

    ``GET /token?service=S&scope=repository:NAME:ACTIONS`` with the right Basic
    credentials answers ``{"token": JWT}`` granting that scope; anything else
    401.  ``scopes`` lists the scopes asked, in order.
    """

    service = "nodehost-test-registry"
    issuer = "nodehost-test-issuer"

    def __init__(self, credentials: tuple[str, str]) -> None:
        import datetime
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID

        self.credentials = credentials
        self.scopes: list[str] = []
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.issuer)])
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.key.public_key()).serial_number(1)
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )  # fmt: skip
        self.certificate_pem = self.certificate.public_bytes(serialization.Encoding.PEM)
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                from urllib.parse import parse_qs, urlsplit

                query = parse_qs(urlsplit(self.path).query)
                expected = base64.b64encode(":".join(issuer.credentials).encode()).decode()
                if self.headers.get("Authorization") != f"Basic {expected}":
                    self.send_response(401)
                    self.end_headers()
                    return
                scope = query.get("scope", [""])[0]
                issuer.scopes.append(scope)
                body = json.dumps({"token": issuer.token(scope)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, scope: str) -> str:
        """A JWT granting ``scope`` (``repository:NAME:ACTIONS``) for five minutes."""
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding

        kind, name, actions = ([*scope.split(":"), "", "", ""])[:3] if scope else ("", "", "")
        now = int(time.time())
        der = self.certificate.public_bytes(serialization.Encoding.DER)
        header = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(der).decode()]}
        claims = {
            "iss": self.issuer, "sub": "puller", "aud": self.service, "exp": now + 300,
            "nbf": now - 60, "iat": now, "jti": f"{now}-{len(self.scopes)}",
            "access": [{"type": kind, "name": name, "actions": actions.split(",")}] if kind else [],
        }  # fmt: skip
        signed = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{_b64url(signature)}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
