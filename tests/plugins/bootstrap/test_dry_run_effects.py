"""``start --dry-run`` has no effects: no folder, no key, no serial, no request, no wait.

Checked on the filesystem (every file under the test's folder and the CA's
serial, before and after) and on the real test API server (the requests it saw).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from clusterrun import CONFIG_MAP, NAMESPACE, NODE_NAME

from nodehost.pki.ca import create_signer_ca


def tree(root: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under ``root``: (mode, content or link target); directories too."""
    entries: dict[str, tuple[int, bytes | str]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        if path.is_symlink():
            entries[str(path)] = (info.st_mode, str(path.readlink()))
        elif path.is_file():
            entries[str(path)] = (info.st_mode, path.read_bytes())
        else:
            entries[str(path)] = (info.st_mode, "")
    return entries


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_dry_run_without_config_writes_no_folder_and_uses_no_serial(
    nodehost: str, api, tmp_path: Path
) -> None:
    create_signer_ca(tmp_path / "master", name="dry-run-ca", key_type="ecdsa")
    before = tree(tmp_path)
    done = run([
        nodehost, "start", "--dry-run", f"--master-cert-dir={tmp_path / 'master'}",
        f"--kubeconfig={api.bootstrap_kubeconfig}", f"--config-dir={tmp_path / 'node'}",
        f"--state-dir={tmp_path / 'state'}", f"--hostname={NODE_NAME}",
        "--components=kubelet,proxy", "--standins=always",
    ])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == before
    node = tmp_path / "node"
    assert done.stdout.splitlines()[:2] == [
        f"would write the node folder {node} (dry run: nothing is written, signed or sent)",
        f"  new key and certificate signed by {tmp_path / 'master' / 'ca.crt'}: "
        "master-client.crt, master-client.key, server.crt, server.key",
    ]
    assert f"Plan for {node / 'node-config.yaml'}" in done.stdout
    assert f"--kubeconfig={node / 'node.kubeconfig'}" in done.stdout


def test_dry_run_of_an_existing_folder_keeps_its_pairs_and_changes_nothing(
    nodehost: str, api, tmp_path: Path
) -> None:
    create_signer_ca(tmp_path / "master", name="dry-run-ca", key_type="ecdsa")
    flags = [
        f"--master-cert-dir={tmp_path / 'master'}", f"--kubeconfig={api.bootstrap_kubeconfig}",
        f"--config-dir={tmp_path / 'node'}", f"--hostname={NODE_NAME}",
    ]  # fmt: skip
    assert run([nodehost, "start", f"--write-config={tmp_path / 'node'}", *flags]).returncode == 0
    before = tree(tmp_path)
    done = run([
        nodehost, "start", "--dry-run", "--json", *flags, f"--state-dir={tmp_path / 'state'}",
        "--components=kubelet,proxy", "--standins=always",
    ])  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == before
    actions = json.loads(done.stdout)["actions"]
    assert "  kept as they are: master-client.crt, master-client.key, server.crt, server.key" in (
        actions
    )


def test_dry_run_with_bootstrap_creates_no_key_and_contacts_nothing(
    start_args, api, tmp_path: Path, node_dir: Path
) -> None:
    before = tree(tmp_path)
    seen = len(api.requests)
    done = run(start_args("--dry-run", "--bootstrap-timeout=1h"))
    assert done.returncode == 0, done.stderr
    assert tree(tmp_path) == before
    assert api.requests[seen:] == []
    assert api.csrs() == []
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"would bootstrap the node folder {node_dir} (dry run: nothing is written, signed or sent):"
    )
    assert f"system:node:{NODE_NAME} to {api.url}" in lines[1]
    assert f"read config map {NAMESPACE}/{CONFIG_MAP}" in done.stdout


def test_dry_run_with_bootstrap_needs_no_api_server(start_args, api, tmp_path: Path) -> None:
    api.go_down()
    done = run(start_args("--dry-run", "--bootstrap-timeout=1h"))
    assert done.returncode == 0, done.stderr
    assert "would bootstrap" in done.stdout


def test_dry_run_with_an_unloadable_bootstrap_kubeconfig_fails_as_the_real_run(
    start_args, api, tmp_path: Path
) -> None:
    """A dry run says what the real run would fail on, with the same exit code."""
    missing = tmp_path / "no-such.kubeconfig"
    argv = [a for a in start_args() if not a.startswith("--kubeconfig=")]
    argv.append(f"--kubeconfig={missing}")
    real = run(argv)
    dry = run([*argv, "--dry-run"])
    assert real.returncode == dry.returncode == 1, (real.stderr, dry.stderr)
    line = f"error: unable to load bootstrap kubeconfig: {missing} does not exist"
    assert line in real.stderr and line in dry.stderr
    assert "would bootstrap" not in dry.stdout
