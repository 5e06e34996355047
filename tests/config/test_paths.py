"""Relative paths resolved against the config file's directory (:ref:`origin-paths`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nodehost.config.load import load_node_config
from nodehost.config.paths import resolve_path

CONFIG = """\
apiVersion: v1
kind: NodeConfig
servingInfo:
  certFile: server.crt
  keyFile: ./tls/server.key
  clientCA: /etc/origin/node/ca.crt
  namedCertificates:
  - names: [a.example.com]
    certFile: named/a.crt
    keyFile: named/a.key
masterKubeConfig: ../node.kubeconfig
dnsRecursiveResolvConf: resolv.conf
volumeDirectory: volumes
podManifestConfig:
  path: manifests
  fileCheckIntervalSeconds: 5
dnsDomain: relative/looking
imageConfig:
  format: registry/image-${component}
kubeletArguments:
  cert-dir: [certs]
  client-ca-file: [ca.crt, /abs/ca.crt, ""]
  root-dir: [kubelet]
  bootstrap-kubeconfig: [bootstrap.kubeconfig]
  config: [kubelet.yaml]
proxyArguments:
  config-file: [proxy.yaml]
"""


@pytest.fixture
def config_dir(write_yaml: Callable[..., Path], tmp_path: Path) -> Path:
    (tmp_path / "etc").mkdir()
    write_yaml(CONFIG, "etc/node-config.yaml")
    return tmp_path / "etc"


def test_path_fields_are_resolved(config_dir: Path) -> None:
    config, problems = load_node_config(str(config_dir / "node-config.yaml"))
    assert problems == []
    base = str(config_dir)
    serving = config.serving_info
    assert serving.cert_file == f"{base}/server.crt"
    assert serving.key_file == f"{base}/tls/server.key"
    assert serving.named_certificates[0].cert_file == f"{base}/named/a.crt"
    assert serving.named_certificates[0].key_file == f"{base}/named/a.key"
    assert config.master_kube_config == f"{config_dir.parent}/node.kubeconfig"
    assert config.dns_recursive_resolv_conf == f"{base}/resolv.conf"
    assert config.volume_directory == f"{base}/volumes"
    assert config.pod_manifest_config is not None
    assert config.pod_manifest_config.path == f"{base}/manifests"


def test_absolute_and_non_path_fields_are_left_alone(config_dir: Path) -> None:
    config, _ = load_node_config(str(config_dir / "node-config.yaml"))
    assert config.serving_info.client_ca == "/etc/origin/node/ca.crt"
    assert config.dns_domain == "relative/looking"
    assert config.image_config.format == "registry/image-${component}"


def test_kubelet_arguments_ending_in_file_or_dir_are_resolved(config_dir: Path) -> None:
    config, _ = load_node_config(str(config_dir / "node-config.yaml"))
    arguments = config.kubelet_arguments
    assert arguments["cert-dir"] == (f"{config_dir}/certs",)
    assert arguments["client-ca-file"] == (f"{config_dir}/ca.crt", "/abs/ca.crt", "")
    assert arguments["root-dir"] == (f"{config_dir}/kubelet",)


def test_bootstrap_kubeconfig_other_kubelet_flags_and_proxy_arguments_are_not(
    config_dir: Path,
) -> None:
    config, _ = load_node_config(str(config_dir / "node-config.yaml"))
    assert config.kubelet_arguments["bootstrap-kubeconfig"] == ("bootstrap.kubeconfig",)
    assert config.kubelet_arguments["config"] == ("kubelet.yaml",)
    assert config.proxy_arguments["config-file"] == ("proxy.yaml",)


def test_empty_path_stays_empty(write_yaml: Callable[..., Path]) -> None:
    config, _ = load_node_config(
        str(write_yaml('apiVersion: v1\nkind: NodeConfig\nmasterKubeConfig: ""\n'))
    )
    assert config.master_kube_config == ""
    assert config.volume_directory == ""


def test_relative_config_file_resolves_against_its_absolute_directory(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(config_dir.parent)
    config, _ = load_node_config("etc/node-config.yaml")
    assert config.base_dir == str(config_dir)
    assert config.source == "etc/node-config.yaml"
    assert config.serving_info.cert_file == f"{config_dir}/server.crt"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("", ""),
        ("/abs/../x", "/abs/../x"),
        ("a/./b//c", "/base/a/b/c"),
        ("../up", "/up"),
        ("../../../x", "/x"),
    ],
)
def test_resolve_path_cleans_like_go(path: str, expected: str) -> None:
    assert resolve_path("/base", path) == expected
