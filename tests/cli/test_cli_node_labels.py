"""``--node-label`` and ``--node-taint``: usage errors naming the flag, merged into the
kubelet's arguments (``--write-flags``), and the file's labels checked by ``config validate``."""

from __future__ import annotations

from pathlib import Path


def test_write_flags_shows_the_flags_merged_with_the_file(nodehost, write_config, node_dir) -> None:
    text = (node_dir / "node-config.yaml").read_text()
    config = write_config(
        text + '  node-labels: ["tier=web,zone=a"]\n  register-with-taints: ["x:NoSchedule"]\n'
    )
    result = nodehost(
        "start",
        f"--config={config}",
        "--write-flags",
        "--node-label=zone=b",
        "--node-label=node.kubernetes.io/pool=gpu",
        "--node-taint=gpu=true:NoExecute",
    )
    assert result.code == 0, result.err
    # Repeated, as the kubelet takes them: a later pair replaces the same key.
    assert "--node-labels=tier=web,zone=a --node-labels=zone=b " in result.out
    assert "--node-labels=node.kubernetes.io/pool=gpu " in result.out
    assert "--register-with-taints=x:NoSchedule,gpu=true:NoExecute" in result.out


def test_a_label_the_kubelet_refuses_is_a_usage_error(nodehost, node_dir: Path) -> None:
    config = node_dir / "node-config.yaml"
    result = nodehost(
        "start", f"--config={config}", "--write-flags", "--node-label=node-role.kubernetes.io/x="
    )
    assert result.code == 2
    assert "--node-label" in result.err
    assert "a kubelet may not set 'node-role.kubernetes.io/x' on its Node" in result.err


def test_a_taint_with_a_bad_effect_is_a_usage_error(nodehost, node_dir: Path) -> None:
    config = node_dir / "node-config.yaml"
    result = nodehost("start", f"--config={config}", "--write-flags", "--node-taint=a=b:Never")
    assert result.code == 2
    assert "--node-taint" in result.err and "invalid taint effect: Never" in result.err


def test_the_same_taint_twice_is_a_usage_error(nodehost, node_dir: Path) -> None:
    config = node_dir / "node-config.yaml"
    twice = ["--node-taint=a=1:NoSchedule", "--node-taint=a=2:NoSchedule"]
    result = nodehost("start", f"--config={config}", "--write-flags", *twice)
    assert result.code == 2 and "given twice" in result.err


def test_config_validate_names_the_labels_field(nodehost, write_config, node_dir) -> None:
    text = (node_dir / "node-config.yaml").read_text()
    config = write_config(text + '  node-labels: ["k8s.io/x=1,bad key=1"]\n', "labels.yaml")
    result = nodehost("config", "validate", str(config))
    assert result.code == 255
    assert '  kubeletArguments.node-labels: Invalid value: "bad key=1": label key' in result.err
    assert (
        'labels.yaml: kubeletArguments.node-labels: Invalid value: "k8s.io/x=1": a kubelet may not'
        in result.err
    )
