"""nodehost's pytest plugin (the ``pytest11`` entry point): every fixture, as an author uses it."""

from __future__ import annotations

import json
import os
import stat
import urllib.request

import pytest

from nodehost.errors import ConfigInvalid

pytest_plugins = ["pytester"]


@pytest.fixture
def proxy_config(node_folder, free_port):
    """The node folder's config with kube-proxy's /healthz on a free port (never 10256)."""
    address = f"127.0.0.1:{free_port()}"
    return node_folder.update({"proxyArguments": {"healthz-bind-address": [address]}})


def test_fixtures_need_no_conftest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_uses_the_kit(node_folder, node_config, free_port, task_context):
            assert node_folder.config_path.exists()
            assert node_config({"nodeName": "n1"}).network_config.mtu == 1450
            assert 0 < free_port() < 65536
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_plugin_can_be_switched_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_kit(node_folder):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:nodehost", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*fixture 'node_folder' not found*"])


def test_node_ca_is_a_signer_with_a_private_key(node_ca) -> None:
    assert stat.S_IMODE(os.stat(node_ca.key).st_mode) == 0o600
    assert b"BEGIN CERTIFICATE" in node_ca.cert.read_bytes()


def test_node_folder_is_what_config_create_writes(node_folder, nodehost_cli) -> None:
    for name in ("node.kubeconfig", "server.crt", "server.key", "master-client.crt", "ca.crt"):
        assert (node_folder.path / name).exists(), name
    result = nodehost_cli("config", "validate", str(node_folder.config_path))
    assert result.code == 0, result.err
    assert node_folder.load().node_name == "node1.example.com"


def test_node_folder_update_merges_and_deletes(node_folder) -> None:
    node_folder.update({"networkConfig": {"mtu": 1400}, "dnsIP": "10.0.0.10"})
    node_folder.update({"dnsIP": None})
    raw = node_folder.raw()
    assert raw["networkConfig"]["mtu"] == 1400
    assert "networkPluginName" in raw["networkConfig"]  # merged, not replaced
    assert "dnsIP" not in raw


def test_node_config_applies_origins_defaults_and_keeps_plugin_sections(node_config) -> None:
    config = node_config({"nodeName": "n1", "bridgeNetwork": {"podCIDR": "10.244.1.0/24"}})
    assert config.iptables_sync_period == "30s"
    assert config.network_config.mtu == 1450
    assert config.extra["bridgeNetwork"] == {"podCIDR": "10.244.1.0/24"}


def test_node_config_reports_type_errors_with_their_paths(node_config) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        node_config({"networkConfig": {"mtu": "big"}, "nodeIP": 7})
    rendered = caught.value.render()
    assert "networkConfig.mtu: Invalid value" in rendered
    assert "nodeIP: Invalid value" in rendered


def test_sample_config_is_a_complete_node_with_changes_merged(sample_config, tmp_path) -> None:
    config = sample_config(nodeIP="192.0.2.2", servingInfo={"bindAddress": "127.0.0.1:1"})
    assert (config.node_name, config.node_ip) == ("node1.example.com", "192.0.2.2")
    assert config.serving_info.bind_address == "127.0.0.1:1"
    assert config.serving_info.cert_file == str(tmp_path / "node" / "server.crt")  # kept
    assert config.source == str(tmp_path / "node-config.yaml")
    assert sample_config(dnsIP=None).dns_ip == ""  # None deletes a key


def test_sample_config_reports_type_errors_with_their_paths(sample_config) -> None:
    with pytest.raises(ConfigInvalid) as caught:
        sample_config(networkConfig={"mtu": "big"})
    assert "networkConfig.mtu: Invalid value" in caught.value.render()


def test_node_plan_is_the_dry_run(node_plan, proxy_config) -> None:
    plan = node_plan(proxy_config, components="proxy")
    (proxy,) = plan.components
    assert proxy.name == "proxy"
    assert proxy.standin or proxy.plan.run.argv[0].endswith("kube-proxy")


def test_node_run_starts_reports_and_stops(node_run, proxy_config) -> None:
    run = node_run(proxy_config, components="proxy").ready()
    assert run.status()["ready"] is True
    assert run.component("proxy")["pid"]
    assert any(event.get("event") == "node ready" for event in run.logs())
    assert run.stop() == 0


def test_node_run_says_why_a_node_never_became_ready(node_run, proxy_config) -> None:
    from nodehost.testing.noderun import NodeRunError

    run = node_run(
        proxy_config,
        components="proxy",
        env={"NODEHOST_STANDIN_CRASH_AFTER": "0:3"},
        args=("--crash-loop-limit=1",),
    )
    with pytest.raises(NodeRunError, match=r"nodehost exited \(1\) before the node was ready"):
        run.ready()


def test_task_context_records_what_a_task_says(task_context) -> None:
    task_context.report({"served": 3}, problems=["upstream down"])
    task_context.report(problems=())
    task_context.ready()
    assert task_context.is_ready
    assert task_context.statuses == ["upstream down", "ready"]
    assert task_context.details == {"served": 3}


def test_task_context_records_configs_a_task_applies(task_context) -> None:
    import asyncio

    result = asyncio.run(task_context.apply_config(b"nodeName: n\n", "my source"))
    assert (result.result, result.origin, result.generation) == ("applied", "my source", 2)
    assert task_context.applied_configs == [(b"nodeName: n\n", "my source")]


def test_api_server_answers_with_its_kubeconfigs(api_server) -> None:
    assert api_server.bootstrap_kubeconfig.exists()
    assert api_server.url.startswith("https://127.0.0.1:")


@pytest.mark.needs("root", "ip", "cni-plugins")  # what the fixture needs inside
def test_master_link_is_up_with_its_address_and_goes_away(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import json, pathlib
        from nodehost.cni import hostnet

        def test_link(master_link):
            link = master_link(mtu=1400)
            state = hostnet.link_state(link.name)
            assert state.up and state.mtu == 1400
            assert link.address in hostnet.addresses(device=link.name)[link.name]
            pathlib.Path("made").write_text(link.name)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1)
    from nodehost.cni import hostnet

    assert (pytester.path / "made").read_text() not in hostnet.links()


def test_cli_result_carries_code_and_streams(nodehost_cli) -> None:
    result = nodehost_cli("network", "providers", "--json")
    assert result.code == 0
    assert "bridge" in {item["name"] for item in json.loads(result.out)}
    assert nodehost_cli("start", "--bogus").code == 2


def test_free_port_is_bindable(free_port) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port()))


def test_status_url_is_reachable_during_a_run(node_run, proxy_config) -> None:
    run = node_run(proxy_config, components="proxy").ready()
    with urllib.request.urlopen(run.url("/healthz"), timeout=10) as response:
        assert response.status == 200
