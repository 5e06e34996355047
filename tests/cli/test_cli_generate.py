"""``start --write-config`` and ``start`` without ``--config``: Origin's generate branch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: master
  cluster: {server: "https://master.example.com:8443"}
contexts:
- name: admin
  context: {cluster: master, user: admin}
current-context: admin
users:
- name: admin
  user: {token: not-a-real-token}
"""


@pytest.fixture
def master(tmp_path: Path, nodehost) -> Path:
    """A signer CA folder (ECDSA, for speed) and an admin kubeconfig beside it."""
    folder = tmp_path / "master"
    result = nodehost("ca", "create", "--dir", str(folder), "--key-type", "ecdsa")
    assert result.code == 0, result.err
    (tmp_path / "admin.kubeconfig").write_text(KUBECONFIG)
    return folder


def generate_args(master: Path, *extra: str) -> list[str]:
    kubeconfig = master.parent / "admin.kubeconfig"
    return ["start", f"--master-cert-dir={master}", f"--kubeconfig={kubeconfig}", *extra]


def test_write_config_generates_a_valid_node_folder(nodehost, master: Path, tmp_path: Path) -> None:
    node = tmp_path / "node1"
    result = nodehost(
        *generate_args(master, f"--write-config={node}", "--hostname=node1.example.com")
    )
    assert result.code == 0, result.err
    assert result.out.strip() == f"Wrote node config to {node / 'node-config.yaml'}"
    assert (node / "server.key").stat().st_mode & 0o777 == 0o600
    assert nodehost("config", "validate", str(node / "node-config.yaml")).code == 0


def test_generated_config_carries_the_master_url(nodehost, master: Path, tmp_path: Path) -> None:
    node = tmp_path / "node1"
    nodehost(*generate_args(master, f"--write-config={node}"))
    assert "https://master.example.com:8443" in (node / "node.kubeconfig").read_text()


def test_start_without_config_generates_then_plans(nodehost, master: Path, tmp_path: Path) -> None:
    node = tmp_path / "generated"
    args = generate_args(master, f"--config-dir={node}", "--dry-run", "--standins=always")
    result = nodehost(*args, "--components=kubelet")
    assert result.code == 0, result.err
    assert f"Plan for {node / 'node-config.yaml'}" in result.out


def test_second_generation_reuses_the_folder(nodehost, master: Path, tmp_path: Path) -> None:
    node = tmp_path / "generated"
    args = generate_args(master, f"--write-config={node}")
    assert nodehost(*args).code == 0
    key_before = (node / "server.key").read_bytes()
    result = nodehost(*args)
    assert result.code == 0, result.err
    assert (node / "server.key").read_bytes() == key_before


def test_generation_needs_a_kubeconfig(nodehost, master: Path, tmp_path: Path) -> None:
    result = nodehost("start", f"--master-cert-dir={master}", f"--write-config={tmp_path / 'n'}")
    assert result.code == 2
    assert "--kubeconfig must be set to provide API server connection information" in result.err
    assert not (tmp_path / "n").exists()


def test_generation_without_a_signer_ca_fails_cleanly(
    nodehost, master: Path, tmp_path: Path
) -> None:
    node = tmp_path / "n"
    args = generate_args(tmp_path / "no-such-ca", f"--write-config={node}")
    args[2] = f"--kubeconfig={master.parent / 'admin.kubeconfig'}"
    result = nodehost(*args)
    assert result.code in (1, 2)
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert not node.exists()


def test_bad_listen_is_a_usage_error(nodehost) -> None:
    result = nodehost("start", "--listen=ftp://x:1", "--dry-run")
    assert result.code == 2
    assert "--listen" in result.err


def test_missing_signer_files_are_blamed_on_master_cert_dir(
    nodehost, master: Path, tmp_path: Path
) -> None:
    (master / "ca-bundle.crt").unlink()
    result = nodehost(*generate_args(master, f"--write-config={tmp_path / 'n'}"))
    assert result.code == 2
    assert result.err.startswith("error: invalid value for --master-cert-dir:")
    assert "ca-bundle.crt" in result.err


def test_a_bad_hostname_is_blamed_on_hostname(nodehost, master: Path, tmp_path: Path) -> None:
    result = nodehost(
        *generate_args(master, f"--write-config={tmp_path / 'n'}", "--hostname=Bad Host!")
    )
    assert result.code == 2
    assert "invalid value for --hostname" in result.err


def test_recursive_resolv_conf_reaches_a_generated_config(
    nodehost, master: Path, tmp_path: Path
) -> None:
    resolv = tmp_path / "upstream.conf"
    resolv.write_text("nameserver 127.0.0.53\n")
    node = tmp_path / "generated"
    args = generate_args(master, f"--write-config={node}", f"--recursive-resolv-conf={resolv}")
    result = nodehost(*args)
    assert result.code == 0, result.err
    from nodehost.config.load import load_node_config
    from nodehost.options import StartOptions
    from nodehost.resolve import apply_overrides

    config, _ = load_node_config(str(node / "node-config.yaml"))
    options = StartOptions(recursive_resolv_conf=str(resolv))
    assert apply_overrides(config, options).dns_recursive_resolv_conf == str(resolv)


def test_generation_names_what_is_wrong_with_the_kubeconfig(
    nodehost, master: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    thin = tmp_path / "thin.kubeconfig"
    thin.write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    for path, reason in (
        (tmp_path / "nonexistent", "does not exist"),
        ("/dev/zero", "not a regular file (a character device)"),
        (fifo, "not a regular file (a named pipe)"),
        (thin, "names no API server"),
    ):
        result = nodehost(
            "start",
            f"--master-cert-dir={master}",
            f"--config-dir={tmp_path / 'n'}",
            f"--kubeconfig={path}",
            "--dry-run",
        )
        assert result.code == 2, result.err
        assert "--kubeconfig" in result.err and str(path) in result.err and reason in result.err
        assert "Traceback" not in result.err


def bridge_args(master: Path, tmp_path: Path, *sets: str) -> list[str]:
    """A dry run of a config generated from flags, with the bridge provider and ``--set``s.

    The bridge finds its CNI plugins in a folder of stand-in files (planning only checks
    that they exist), so the dry run plans where the real plugins are not installed.
    """
    plugins = tmp_path / "cni-bin"
    plugins.mkdir(exist_ok=True)
    for name in ("bridge", "host-local", "portmap", "loopback"):
        (plugins / name).write_text("#!/bin/sh\nexit 1\n")
        (plugins / name).chmod(0o755)
    base = [
        "networkConfig.networkPluginName=bridge",
        "bridgeNetwork.podCIDR=10.244.1.0/24",
        f"bridgeNetwork.cniBinDirs=[{plugins}]",
    ]
    extra = [f"--config-dir={tmp_path / 'n'}", "--dry-run", "--standins=always"]
    return generate_args(
        master, *extra, "--components=kubelet,sdn", *(f"--set={s}" for s in [*base, *sets])
    )


def test_set_gives_a_plugin_section_of_a_generated_config(
    nodehost, master: Path, tmp_path: Path
) -> None:
    result = nodehost(*bridge_args(master, tmp_path, f"bridgeNetwork.cniConfDir={tmp_path}"))
    assert result.code == 0, result.err
    assert f"writes: {tmp_path}/10-nodehost-bridge.conflist" in result.out


def test_a_set_value_is_validated_at_its_field_path(nodehost, master: Path, tmp_path: Path) -> None:
    result = nodehost(*bridge_args(master, tmp_path, "bridgeNetwork.ipMasq=abc"))
    assert result.code == 255, result.err
    assert result.err.startswith("Invalid NodeConfig ")
    assert '  bridgeNetwork.ipMasq: Invalid value: "abc": must be true or false' in result.err


def test_set_is_also_a_variable(nodehost_exe, master: Path, tmp_path: Path) -> None:
    """``NODEHOST_SET``: space-separated, as every repeatable flag's variable."""
    args = [a for a in bridge_args(master, tmp_path) if not a.startswith("--set=")]
    settings = "networkConfig.networkPluginName=bridge bridgeNetwork.podCIDR=10.244.1.0/24"
    env = {**os.environ, "NODEHOST_SET": f"{settings} bridgeNetwork.ipMasq=abc"}
    result = nodehost_exe(*args, env=env)
    assert result.code == 255, result.err
    assert "bridgeNetwork.ipMasq: Invalid value" in result.err


def test_a_set_value_is_yaml(nodehost, master: Path, tmp_path: Path) -> None:
    """``false`` is the boolean, so the bridge's masquerade rule goes (a string would fail)."""
    result = nodehost(*bridge_args(master, tmp_path, "bridgeNetwork.ipMasq=false"))
    assert result.code == 0, result.err


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("nosuch.key=1", "no NodeConfig key or plugin section is named 'nosuch'"),
        ("bridgeNetwork=1", "'bridgeNetwork=1' is not SECTION.KEY=VALUE"),
        ("bridgeNetwork.mtu", "is not SECTION.KEY=VALUE"),
    ],
)
def test_a_bad_set_is_a_usage_error_naming_it(
    nodehost, master: Path, tmp_path: Path, setting: str, message: str
) -> None:
    result = nodehost(*bridge_args(master, tmp_path, setting))
    assert result.code == 2, result.err
    assert result.err.startswith("error: invalid value for --set: ")
    assert message in result.err


def test_set_with_a_config_file_is_refused_not_ignored(nodehost, tmp_path: Path) -> None:
    config = tmp_path / "node-config.yaml"
    result = nodehost("start", f"--config={config}", "--set=bridgeNetwork.mtu=1400", "--dry-run")
    assert result.code == 2
    assert "--set" in result.err and "edit --config's file" in result.err
