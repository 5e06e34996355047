"""``config create`` killed at every rename: the folder is the old set or the new set, never a mix.

strace's fault injection delivers SIGKILL at the N-th rename (``rename``,
``renameat``, ``renameat2``) of a real ``nodehost config create``, for
N = 1, 2, ... until a run gets through.  After each kill the folder must be
consistent -- every certificate matches its key, the kubeconfig embeds the
client pair, the keys are all old or all new -- and ``config validate``
accepts it; the next run then succeeds and leaves nothing stale behind
(temporary files, staging folders, unreferenced versions: keys included).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nodehost.pki.certs import decode_certificates
from nodehost.pki.keys import decode_private_key, key_matches
from nodehost.testing.parts import find_program

STRACE = find_program("strace")
pytestmark = pytest.mark.needs("strace")

PAIRS = (("server.crt", "server.key"), ("master-client.crt", "master-client.key"))
KILLED = -9
MAX_KILL_POINTS = 60


def _nodehost(*args: str, kill_at: int | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nodehost", *args]
    if kill_at is not None:
        assert STRACE is not None
        renames = "rename,renameat,renameat2"
        command = [STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={renames}",
                   "-e", f"inject={renames}:signal=SIGKILL:when={kill_at}", *command]  # fmt: skip
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no .pyc renames to count
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


def _matches(cert: bytes, key: bytes, what: str) -> None:
    certificate = decode_certificates(cert, what)[0]
    assert key_matches(decode_private_key(key, what), certificate.public_key()), what


def assert_consistent(folder: Path, old_keys: dict[str, bytes]) -> None:
    """One set: pairs match, the kubeconfig holds the client pair, keys all old or all new."""
    for cert, key in PAIRS:
        _matches((folder / cert).read_bytes(), (folder / key).read_bytes(), f"{folder / cert}")
    user = yaml.safe_load((folder / "node.kubeconfig").read_text())["users"][0]["user"]
    client_cert = base64.b64decode(user["client-certificate-data"])
    client_key = base64.b64decode(user["client-key-data"])
    assert client_cert == (folder / "master-client.crt").read_bytes()
    assert client_key == (folder / "master-client.key").read_bytes()
    same = {name: (folder / name).read_bytes() == data for name, data in old_keys.items()}
    assert len(set(same.values())) == 1, f"a mix of old and new keys: {same}"


def assert_nothing_stale(folder: Path) -> None:
    hidden = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    assert [name for name in hidden if ".tmp-" in name] == []
    assert len([name for name in hidden if name.startswith(".nodehost-v-")]) <= 1
    assert [p.name for p in folder.parent.iterdir() if ".staging-" in p.name] == []


def _flatten(folder: Path) -> None:
    """Turn a folder into Origin's plain layout (what Origin or an older nodehost wrote)."""
    for path in list(folder.iterdir()):
        if path.name.startswith("."):
            continue
        data, mode = path.read_bytes(), path.stat().st_mode & 0o777
        path.unlink()
        path.write_bytes(data)
        path.chmod(mode)
    for path in folder.iterdir():
        if path.name.startswith("."):
            (shutil.rmtree if path.is_dir() and not path.is_symlink() else os.unlink)(path)


def _keys(folder: Path) -> dict[str, bytes]:
    return {key: (folder / key).read_bytes() for _, key in PAIRS}


@pytest.mark.parametrize("layout", ["versioned", "origin"])
def test_overwrite_killed_at_every_rename_leaves_one_whole_set(
    ca_dir: Path, tmp_path: Path, config_create_args, layout: str
) -> None:
    pristine = tmp_path / "pristine" / "node"
    created = _nodehost("config", "create", *config_create_args(ca_dir, pristine))
    assert created.returncode == 0, created.stderr
    if layout == "origin":
        _flatten(pristine)
    old_keys = _keys(pristine)
    for kill_at in range(1, MAX_KILL_POINTS):
        folder = tmp_path / f"run{kill_at}" / "node"
        shutil.copytree(pristine, folder, symlinks=True)
        args = config_create_args(ca_dir, folder, "--overwrite")
        result = _nodehost("config", "create", *args, kill_at=kill_at)
        if result.returncode == 0:
            break
        assert result.returncode == KILLED, result.stderr
        assert_consistent(folder, old_keys)
        validated = _nodehost("config", "validate", str(folder / "node-config.yaml"))
        assert validated.returncode == 0, validated.stderr
        again = _nodehost("config", "create", *args)
        assert again.returncode == 0, again.stderr
        assert_consistent(folder, old_keys)
        assert_nothing_stale(folder)
    else:
        pytest.fail(f"still killed after {MAX_KILL_POINTS} renames")
    assert kill_at > 2, "the run never renamed: the fault injection did not work"


def test_creation_killed_at_every_rename_leaves_no_folder_or_a_whole_one(
    ca_dir: Path, tmp_path: Path, config_create_args
) -> None:
    for kill_at in range(1, MAX_KILL_POINTS):
        folder = tmp_path / f"run{kill_at}" / "node"
        args = config_create_args(ca_dir, folder)
        result = _nodehost("config", "create", *args, kill_at=kill_at)
        if result.returncode == 0:
            break
        assert result.returncode == KILLED, result.stderr
        if folder.exists():
            assert_consistent(folder, _keys(folder))
        again = _nodehost("config", "create", *args)
        assert again.returncode == 0, again.stderr
        assert_consistent(folder, _keys(folder))
        assert_nothing_stale(folder)
    else:
        pytest.fail(f"still killed after {MAX_KILL_POINTS} renames")
