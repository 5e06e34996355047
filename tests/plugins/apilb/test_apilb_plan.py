"""The apilb component's plan and validation: when it runs, what the others are routed to."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodehost.errors import ConfigInvalid
from nodehost.pluginhost.manager import Hooks
from nodehost.plugins.apilb import routing
from nodehost.plugins.apilb.settings import write_learnt

SERVERS = ["https://10.0.0.2:8443", "https://10.0.0.3:8443"]
COMPONENTS = "kubelet,proxy,bootstrap,apilb"
MASTER = "127.0.0.1:8443"  # nodehost.testing.nodefolder.MASTER_URL


def plan_with(node_folder: Any, node_plan: Any, section: dict[str, Any] | None, **more: Any) -> Any:
    node_folder.update({"apiServerLoadBalancer": section, **more})
    return node_plan(node_folder.config_path, components=COMPONENTS)


def test_with_more_servers_every_other_component_is_routed_through_the_balancer(
    node_folder: Any, node_plan: Any
) -> None:
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS})
    routed = str(Path(plan.state_dir) / "apilb" / "kubeconfig")
    assert f"--kubeconfig={routed}" in plan.get("kubelet").plan.run.argv
    proxy = yaml.safe_load(plan.get("proxy").plan.files[0].content)
    assert proxy["clientConnection"]["kubeconfig"] == routed
    assert routed in plan.get("bootstrap").plan.run.description
    assert plan.components[0].name == "apilb"  # every other one starts after it


def test_the_route_is_asked_once_per_plan_not_once_per_component(
    node_folder: Any, node_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route holds for the whole plan: one answer serves every component's context."""
    asked = []
    ask = Hooks.api_route

    def counted(self: Hooks, *args: Any) -> Any:
        asked.append(args)
        return ask(self, *args)

    monkeypatch.setattr(Hooks, "api_route", counted)
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS})
    assert len(plan.components) == 4
    assert len(asked) == 1


def test_the_routed_kubeconfig_keeps_the_real_name_and_the_credentials(
    node_folder: Any, node_plan: Any
) -> None:
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS, "bindAddress": "127.0.0.1:7443"})
    (spec,) = plan.get("apilb").plan.files
    assert spec.mode == 0o600  # the user entry may hold the key
    routed = yaml.safe_load(spec.content)
    original = yaml.safe_load(node_folder.kubeconfig.read_text())
    cluster = routed["clusters"][0]["cluster"]
    assert cluster["server"] == "https://127.0.0.1:7443"
    assert cluster["tls-server-name"] == "127.0.0.1"  # node_folder's master: MASTER_URL
    source = original["clusters"][0]["cluster"]
    assert cluster["certificate-authority-data"] == source["certificate-authority-data"]
    assert routed["users"][0]["user"] == original["users"][0]["user"]


def test_the_balancer_plans_with_the_kubeconfig_as_it_is(node_folder: Any, node_plan: Any) -> None:
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS})
    task = plan.get("apilb").plan.run.run
    assert task.source == str(node_folder.kubeconfig)
    assert [address for address, _ in task.servers] == [
        MASTER, "10.0.0.2:8443", "10.0.0.3:8443",
    ]  # fmt: skip


def test_with_one_known_server_it_is_inactive_and_nothing_is_routed(
    node_folder: Any, node_plan: Any
) -> None:
    plan = plan_with(node_folder, node_plan, None)
    assert "knows one API server" in plan.get("apilb").plan.inactive_reason
    assert f"--kubeconfig={node_folder.kubeconfig}" in plan.get("kubelet").plan.run.argv


def test_with_one_known_server_the_route_is_found_without_reading_the_kubeconfig(
    node_folder: Any, node_plan: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server configured or learnt: no route, whatever masterKubeConfig says; only the
    balancer's plan reads it, for the server its reason names."""
    read = []
    original = routing._read

    def counted(path: str) -> Any:
        read.append(path)
        return original(path)

    monkeypatch.setattr(routing, "_read", counted)
    plan = plan_with(node_folder, node_plan, None)
    assert "knows one API server" in plan.get("apilb").plan.inactive_reason
    assert len(read) == 1


def test_mode_off_routes_nothing_even_with_servers(node_folder: Any, node_plan: Any) -> None:
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS, "mode": "off"})
    assert plan.get("apilb").plan.inactive_reason == "apiServerLoadBalancer.mode is off"
    assert f"--kubeconfig={node_folder.kubeconfig}" in plan.get("kubelet").plan.run.argv


def test_servers_learnt_before_make_it_run_after_a_restart(
    node_folder: Any, node_plan: Any, tmp_path: Path
) -> None:
    state = tmp_path / "plan-state" / "apilb"
    state.mkdir(parents=True)
    write_learnt(str(state), ("10.0.0.9:6443",))
    plan = plan_with(node_folder, node_plan, None)
    assert plan.get("apilb").plan.inactive_reason is None
    task = plan.get("apilb").plan.run.run
    assert task.known_servers() == [(MASTER, "kubeconfig"), ("10.0.0.9:6443", "cluster")]


def test_servers_learnt_while_running_leave_the_plan_as_it_was(
    node_folder: Any, node_plan: Any, tmp_path: Path
) -> None:
    """A configuration applied later must not restart the balancer for what it learnt."""
    before = plan_with(node_folder, node_plan, {"servers": SERVERS})
    state = tmp_path / "plan-state" / "apilb"
    state.mkdir(parents=True)
    write_learnt(str(state), ("10.0.0.9:6443",))
    after = plan_with(node_folder, node_plan, {"servers": SERVERS})
    assert after.get("apilb").plan == before.get("apilb").plan
    assert after.get("apilb").plan.run.run.known_servers()[-1] == ("10.0.0.9:6443", "cluster")


def test_it_starts_after_localcluster_and_before_the_rest() -> None:
    from nodehost.pluginhost.selection import start_order
    from nodehost.testing.nodefolder import installed_inventory

    catalog = installed_inventory().catalog
    order = [name for name, _ in start_order(catalog, frozenset(catalog.records))]
    assert order.index("localcluster") < order.index("apilb") < order.index("kubelet")
    assert order.index("apilb") < min(order.index(n) for n in ("proxy", "dns", "bootstrap"))


@pytest.mark.parametrize(
    ("section", "path", "detail"),
    [
        ({"servers": ["http://10.0.0.2:8443"]}, "servers[0]", "must be an https URL"),
        ({"servers": [SERVERS[0], "https://x:8443/api"]}, "servers[1]", "no path"),
        ({"servers": [SERVERS[0], SERVERS[0]]}, "servers[1]", "Duplicate value"),
        ({"servers": "https://10.0.0.2:8443"}, "servers", "must be a list"),
        ({"bindAddress": "0.0.0.0:6444"}, "bindAddress", "must be a loopback address"),
        ({"bindAddress": "127.0.0.1:0"}, "bindAddress", "port 1-65535"),
        ({"mode": "always"}, "mode", "Unsupported value"),
        ({"healthInterval": "0s"}, "healthInterval", "must be positive"),
        ({"serverz": []}, "serverz", 'did you mean "servers"'),
    ],
)
def test_a_bad_section_is_refused_naming_the_field(
    node_folder: Any, node_plan: Any, section: dict[str, Any], path: str, detail: str
) -> None:
    with pytest.raises(ConfigInvalid) as raised:
        plan_with(node_folder, node_plan, section)
    lines = [problem.render() for problem in raised.value.errors]
    assert any(
        line.startswith(f"apiServerLoadBalancer.{path}: ") and detail in line for line in lines
    ), lines


def test_config_validate_names_every_bad_field_and_exits_255(
    node_folder: Any, nodehost_cli: Any
) -> None:
    section = {"servers": ["ftp://a", SERVERS[0]], "bindAddress": "10.1.1.1:6444"}
    node_folder.update({"apiServerLoadBalancer": section})
    done = nodehost_cli("config", "validate", str(node_folder.config_path))
    assert done.code == 255, done.err
    assert f"Invalid NodeConfig {node_folder.config_path}" in done.err
    assert '  apiServerLoadBalancer.servers[0]: Invalid value: "ftp://a"' in done.err
    assert '  apiServerLoadBalancer.bindAddress: Invalid value: "10.1.1.1:6444"' in done.err
    assert "Traceback" not in done.err


def test_the_kubelet_restarts_when_rotation_swaps_the_files_the_routed_kubeconfig_names(
    node_folder: Any, node_plan: Any, tmp_path: Path
) -> None:
    """The routed kubeconfig is written only at start: the kubelet's reload files come from
    the kubeconfig it stands for, which names the same files."""
    certificates = node_folder.path / "certificates"
    certificates.mkdir()
    kubeconfig = yaml.safe_load(node_folder.kubeconfig.read_text())
    user = kubeconfig["users"][0]["user"]
    for key, name in (("client-certificate", "client.pem"), ("client-key", "client.key")):
        (certificates / name).write_text(base64.b64decode(user.pop(f"{key}-data")).decode())
        user[key] = f"certificates/{name}"
    node_folder.kubeconfig.write_text(yaml.safe_dump(kubeconfig))
    plan = plan_with(node_folder, node_plan, {"servers": SERVERS})
    reload = plan.get("kubelet").plan.run.reload_files
    assert str(certificates / "client.pem") in reload
    assert str(certificates / "client.key") in reload
    assert str(Path(plan.state_dir) / "apilb" / "kubeconfig") in reload
