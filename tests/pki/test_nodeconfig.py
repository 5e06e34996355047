"""Relative paths in a generated node-config.yaml (Origin's RelativizeNodeConfigPaths)."""

from __future__ import annotations

import pytest
import yaml

from nodehost.pki.nodeconfig import (
    dump_node_config,
    relativize_node_config_paths,
    resolve_node_config_paths,
)


def test_relative_path_needing_backsteps_is_origins_error() -> None:
    raw = {"masterKubeConfig": "../foo"}
    with pytest.raises(ValueError, match=r"^\.\./foo requires backsteps and is not absolute$"):
        relativize_node_config_paths(raw, ".")


def test_absolute_path_needing_backsteps_stays_absolute() -> None:
    raw = {"masterKubeConfig": "/foo"}
    relativize_node_config_paths(raw, "/home/deads")
    assert raw == {"masterKubeConfig": "/foo"}


def test_paths_inside_the_node_folder_become_relative() -> None:
    raw = {
        "servingInfo": {"certFile": "/n/server.crt", "keyFile": "/n/tls/server.key",
                        "namedCertificates": [{"certFile": "/n/a.crt", "keyFile": "/n/a.key"}]},
        "podManifestConfig": {"path": "/n/manifests"},
        "volumeDirectory": "/n",
    }  # fmt: skip
    relativize_node_config_paths(raw, "/n")
    assert raw["servingInfo"]["certFile"] == "server.crt"
    assert raw["servingInfo"]["keyFile"] == "tls/server.key"
    assert raw["servingInfo"]["namedCertificates"][0] == {"certFile": "a.crt", "keyFile": "a.key"}
    assert raw["podManifestConfig"]["path"] == "manifests"
    assert raw["volumeDirectory"] == "."


def test_empty_paths_are_left_alone() -> None:
    raw = {"masterKubeConfig": "", "dnsRecursiveResolvConf": ""}
    relativize_node_config_paths(raw, "/n")
    assert raw == {"masterKubeConfig": "", "dnsRecursiveResolvConf": ""}


def test_only_kubelet_file_and_dir_arguments_are_paths() -> None:
    raw = {
        "kubeletArguments": {"cert-dir": ["/n/certs"], "bootstrap-kubeconfig": ["/n/b.kubeconfig"],
                             "fail-swap-on": ["false"]},
        "proxyArguments": {"config-file": ["/n/proxy.yaml"]},
    }  # fmt: skip
    relativize_node_config_paths(raw, "/n")
    assert raw["kubeletArguments"] == {
        "cert-dir": ["certs"], "bootstrap-kubeconfig": ["/n/b.kubeconfig"], "fail-swap-on": ["false"],
    }  # fmt: skip
    assert raw["proxyArguments"] == {"config-file": ["/n/proxy.yaml"]}


def test_resolve_joins_relative_paths_to_the_base() -> None:
    raw = {"masterKubeConfig": "node/../node.kubeconfig", "volumeDirectory": "/abs"}
    resolve_node_config_paths(raw, "/work")
    assert raw == {"masterKubeConfig": "/work/node.kubeconfig", "volumeDirectory": "/abs"}


def test_dump_puts_api_version_and_kind_first_then_sorted_keys() -> None:
    text = dump_node_config(
        {"nodeName": "n", "kind": "NodeConfig", "apiVersion": "v1", "dnsIP": "",
         "servingInfo": {"keyFile": "k", "bindAddress": "b"}}
    ).decode()  # fmt: skip
    assert [line.split(":")[0] for line in text.splitlines()] == [
        "apiVersion", "kind", "dnsIP", "nodeName", "servingInfo", "  bindAddress", "  keyFile",
    ]  # fmt: skip
    assert yaml.safe_load(text)["servingInfo"] == {"bindAddress": "b", "keyFile": "k"}
