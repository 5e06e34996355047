"""A real openshift-ansible 3.11 node config loads, with Origin's meaning for every plugin name.

The config is ``tests/data/openshift-ansible-3.11/node-config-compute.yaml``
(the shape openshift-ansible's node group template rendered), copied next to
the files it names, with ``networkConfig.networkPluginName`` set per test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

ANSIBLE = Path(__file__).parents[1] / "data" / "openshift-ansible-3.11" / "node-config-compute.yaml"

#: Every networkPluginName Origin 3.x gave a meaning (:ref:`origin-network-plugins`).
OPENSHIFT_SDN = (
    "redhat/openshift-ovs-subnet",
    "redhat/openshift-ovs-multitenant",
    "redhat/openshift-ovs-networkpolicy",
)
NO_SDN = ("cni", "CNI", "")


@pytest.fixture
def ansible_config(tmp_path: Path) -> Callable[..., Path]:
    """``ansible_config(plugin)``: the 3.11 config in tmp_path, its /etc/origin/node files made."""

    def make(plugin: str | None, top_level: str | None = None) -> Path:
        folder = tmp_path / "node"
        folder.mkdir(exist_ok=True)
        for name in ("bootstrap.kubeconfig", "client-ca.crt", "node.kubeconfig"):
            (folder / name).write_text("placeholder\n")
        (folder / "resolv.conf").write_text("nameserver 192.0.2.53\n")
        raw = yaml.safe_load(ANSIBLE.read_text().replace("/etc/origin/node/", f"{folder}/"))
        if plugin is None:
            del raw["networkConfig"]["networkPluginName"]
        else:
            raw["networkConfig"]["networkPluginName"] = plugin
        if top_level is not None:
            raw["networkPluginName"] = top_level
        path = folder / "node-config.yaml"
        path.write_text(yaml.safe_dump(raw))
        return path

    return make


def dry_run(nodehost, path: Path, *extra: str):
    state = path.parent.parent / "state"
    return nodehost(
        "start", "--config", str(path), "--dry-run", "--standins=always", "--disable=runtime",
        f"--state-dir={state}", *extra,
    )  # fmt: skip


def plan_block(out: str, component: str) -> str:
    """The lines of one component in a printed plan."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[1:2] == [component])
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i][:5].strip().rstrip(".").isdigit()),
        len(lines),
    )
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("plugin", [*NO_SDN, *OPENSHIFT_SDN, OPENSHIFT_SDN[0].upper()])
def test_every_name_origin_accepted_validates(nodehost, ansible_config, plugin: str) -> None:
    result = nodehost("config", "validate", str(ansible_config(plugin)))
    assert result.code == 0, result.err
    assert "valid NodeConfig" in result.out


@pytest.mark.parametrize("plugin", [*NO_SDN, *OPENSHIFT_SDN])
def test_no_sdn_is_started_and_no_network_flag_reaches_a_current_kubelet(
    nodehost, ansible_config, plugin: str
) -> None:
    result = dry_run(nodehost, ansible_config(plugin))
    assert result.code == 0, result.err
    assert "inactive:" in plan_block(result.out, "sdn")
    assert "--network-plugin" not in result.out
    flags = nodehost("start", "--config", str(ansible_config(plugin)), "--write-flags")
    assert flags.code == 0, flags.err
    assert "--network-plugin" not in flags.out


def test_cni_means_the_network_of_another_agents_cni_configuration(
    nodehost, ansible_config
) -> None:
    result = dry_run(nodehost, ansible_config("cni"))
    assert "another agent's CNI configuration" in plan_block(result.out, "sdn")
    assert "networkPluginName" not in result.err  # no warning about the name


@pytest.mark.parametrize("plugin", OPENSHIFT_SDN)
def test_an_openshift_sdn_name_warns_at_validate_and_start(
    nodehost, ansible_config, plugin: str
) -> None:
    path = ansible_config(plugin)
    expected = (
        f'warning: {path}: networkConfig.networkPluginName: Invalid value: "{plugin}": '
        f"{plugin!r} is the OpenShift SDN, which nodehost does not run"
    )
    validated = nodehost("config", "validate", str(path))
    assert expected in validated.err
    started = dry_run(nodehost, path)
    assert started.code == 0 and expected in started.err


def test_the_deprecated_top_level_name_means_the_same(nodehost, ansible_config) -> None:
    result = dry_run(nodehost, ansible_config(None, top_level="cni"))
    assert result.code == 0, result.err
    assert "another agent's CNI configuration" in plan_block(result.out, "sdn")


def test_a_misspelt_cni_is_invalid_with_a_suggestion(nodehost, ansible_config) -> None:
    result = nodehost("config", "validate", str(ansible_config("cnl")))
    assert result.code == 255
    assert "no network provider is named 'cnl'" in result.err
    assert "did you mean 'cni'?" in result.err


def test_the_dockershim_socket_as_openshift_ansible_wrote_it_is_origins_default(
    nodehost, ansible_config
) -> None:
    """``/var/run/dockershim.sock`` (no ``unix://``) is the default: nodehost's containerd."""
    path = ansible_config("cni")
    flags = nodehost("start", "--config", str(path), "--write-flags")
    assert "--container-runtime-endpoint=" in flags.out
    assert "/var/run/dockershim.sock" not in flags.out
    result = nodehost("start", "--config", str(path), "--dry-run", "--components=runtime",
                      "--binary", "containerd=/bin/true")  # fmt: skip
    assert "external container runtime" not in result.out, result.out + result.err


def test_metrics_on_every_interface_as_openshift_ansible_asked(nodehost, ansible_config) -> None:
    """``metrics-bind-address: [":11257"]`` was Go's every-interface address to Origin."""
    from nodehost.config.load import load_node_config
    from nodehost.plugins.proxy import configuration

    config, _ = load_node_config(str(ansible_config("cni")))
    arguments = configuration.proxy_arguments(config).arguments
    assert arguments["metrics-bind-address"] == ["0.0.0.0:11257"]
    launch = configuration.launch_arguments(arguments)
    assert json.dumps(launch.values["metrics-bind-address"].config()) == '"0.0.0.0:11257"'


def test_keys_without_effect_are_named_at_validate_and_start(nodehost, ansible_config) -> None:
    """openshift-ansible wrote five settings nodehost has no use for: each is a warning."""
    path = ansible_config("cni")
    keys = [
        "enableUnidling",
        "dockerConfig.execHandlerName",
        "dockerConfig.dockerShimRootDirectory",
        "authConfig.authenticationCacheSize",
        "authConfig.authorizationCacheSize",
    ]
    for result in (nodehost("config", "validate", str(path)), dry_run(nodehost, path)):
        assert result.code == 0, result.err
        warned = [
            line.split(": ")[2]
            for line in result.err.splitlines()
            if line.startswith("warning:") and ": has no effect in nodehost: " in line
        ]
        assert warned == keys
