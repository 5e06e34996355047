"""Each in-namespace step of ``network check`` fails when what it checks is not so.

A stand-in sandbox reports what a real namespace would (addresses, link
state, where a TCP connection came from), so every step's failure is
exercised without root; tests/network/test_network_check.py runs them for real.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import pytest

from nodehost.cni import CniNetwork, RuntimeConf
from nodehost.cni.check import check_gateway, check_inside, check_loopback, exercise
from nodehost.cni.sandbox import Attachment
from nodehost.errors import RuntimeFailure

ADDRESS = "10.244.7.5/24"
GATEWAY = "10.244.7.1"


@dataclass
class FakeSandbox:
    """What the namespace looks like: addresses per link, links up, the source of a connection."""

    addresses_of: dict[str, list[str]] = field(
        default_factory=lambda: {"lo": ["127.0.0.1/8"], "eth0": [ADDRESS]}
    )
    up: set[str] = field(default_factory=lambda: {"lo", "eth0"})
    source: str = "10.244.7.5"
    calls: list[str] = field(default_factory=list)

    def attach_loopback(self) -> None:
        self.calls.append("loopback")

    def addresses(self, ifname: str) -> list[ipaddress.IPv4Interface]:
        return [ipaddress.ip_interface(a) for a in self.addresses_of.get(ifname, [])]

    def link_is_up(self, ifname: str) -> bool:
        return ifname in self.up

    def reach(self, gateway: str) -> str:
        self.calls.append(f"reach {gateway}")
        return self.source

    def attach(self, conflist) -> Attachment:
        self.calls.append("ADD")
        return attachment(conflist=conflist)

    def check(self, attached: Attachment) -> None:
        self.calls.append("CHECK")

    def detach(self, attached: Attachment) -> None:
        self.calls.append("DEL")


def attachment(
    ips: tuple[tuple[str, str | None], ...] = ((ADDRESS, GATEWAY),), conflist=None
) -> Attachment:
    result = {"ips": [{"address": a, **({"gateway": g} if g else {})} for a, g in ips]}
    return Attachment(conflist or {}, RuntimeConf("id", "/run/netns/x", "eth0"), result)


def lines() -> list[str]:
    return []


def network(cni_version: str = "1.0.0", *, loopback: bool = True) -> CniNetwork:
    """A host-topology network whose list (one plugin) the provider writes."""
    conflist = {"cniVersion": cni_version, "name": "demo", "plugins": [{"type": "bridge"}]}
    return CniNetwork("demo", "/nonexistent", ("/nonexistent",), conflist, "10-demo.conflist",
                      loopback=loopback)  # fmt: skip


def test_every_step_passes_on_a_working_namespace() -> None:
    echoed: list[str] = []
    sandbox = FakeSandbox()
    exercise(sandbox, network(), echoed.append)
    assert sandbox.calls == ["loopback", "ADD", f"reach {GATEWAY}", "CHECK", "DEL"]
    steps = [line.split()[0] for line in echoed]
    assert steps == ["loopback", "ADD", "address", "gateway", "CHECK", "DEL"]


def test_loopback_down_fails() -> None:
    with pytest.raises(RuntimeFailure, match="lo is not up"):
        check_loopback(FakeSandbox(up={"eth0"}), lines().append)


def test_loopback_without_127_0_0_1_fails() -> None:
    sandbox = FakeSandbox(addresses_of={"lo": [], "eth0": [ADDRESS]})
    with pytest.raises(RuntimeFailure, match=r"lo is not up with 127\.0\.0\.1"):
        check_loopback(sandbox, lines().append)


def test_an_address_of_the_result_missing_on_the_interface_fails() -> None:
    sandbox = FakeSandbox(addresses_of={"lo": ["127.0.0.1/8"], "eth0": ["10.244.7.9/24"]})
    with pytest.raises(RuntimeFailure, match=r"eth0 inside the namespace lacks 10\.244\.7\.5/24"):
        check_inside(sandbox, attachment(), lines().append)


def test_an_interface_with_no_address_at_all_fails() -> None:
    sandbox = FakeSandbox(addresses_of={"lo": ["127.0.0.1/8"]})
    with pytest.raises(RuntimeFailure, match="gave eth0 no address"):
        check_inside(sandbox, attachment(()), lines().append)


def test_an_interface_that_is_down_fails() -> None:
    with pytest.raises(RuntimeFailure, match="eth0 inside the namespace is down"):
        check_inside(FakeSandbox(up={"lo"}), attachment(), lines().append)


def test_the_address_step_names_the_interface_and_its_addresses() -> None:
    echoed: list[str] = []
    check_inside(FakeSandbox(), attachment(), echoed.append)
    assert echoed == [f"  address  ok  eth0 is up inside the namespace with {ADDRESS}"]


def test_a_connection_to_the_gateway_from_another_source_fails() -> None:
    sandbox = FakeSandbox(source="10.244.7.99")
    with pytest.raises(RuntimeFailure) as caught:
        check_gateway(sandbox, attachment(), lines().append)
    assert str(caught.value) == (
        f"the connection to the gateway {GATEWAY} came from 10.244.7.99, not from 10.244.7.5"
    )


def test_the_gateway_is_reached_from_the_pod_address() -> None:
    sandbox, echoed = FakeSandbox(), []
    check_gateway(sandbox, attachment(), echoed.append)
    assert sandbox.calls == [f"reach {GATEWAY}"]
    assert echoed == [
        f"  gateway  ok  TCP from 10.244.7.5 inside the namespace to {GATEWAY} on the host"
    ]


def test_no_gateway_in_the_result_skips_the_step() -> None:
    sandbox, echoed = FakeSandbox(), []
    check_gateway(sandbox, attachment(((ADDRESS, None),)), echoed.append)
    assert sandbox.calls == []
    assert echoed == ["  gateway  ok  skipped: the result names no gateway"]


class FakeSandboxContext(FakeSandbox):
    """The stand-in as ``run_check`` makes it: constructed, entered, reporting its cleanup."""

    made: list[FakeSandboxContext] = []

    def __init__(self, *, bin_dirs, prefix) -> None:
        super().__init__()
        self.bin_dirs, self.prefix, self.name = bin_dirs, prefix, f"{prefix}-x"
        self.cleanup_report = ["namespace nh-check-x and its interfaces removed"]
        FakeSandboxContext.made.append(self)

    def __enter__(self) -> FakeSandboxContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append("cleanup")


def test_run_check_reports_the_network_the_plugins_and_the_cleanup(monkeypatch, tmp_path) -> None:
    from nodehost.cni import CniNetwork, check

    for plugin in ("bridge", "host-local", "loopback"):
        (tmp_path / plugin).write_text("#!/bin/sh\n")
        (tmp_path / plugin).chmod(0o755)
    conflist = {
        "cniVersion": "1.0.0",
        "name": "demo",
        "plugins": [{"type": "bridge", "ipam": {"type": "host-local"}}],
    }
    network = CniNetwork(
        "bridge", str(tmp_path / "net.d"), (str(tmp_path),), conflist, "10-demo.conflist"
    )
    monkeypatch.setattr(check, "Sandbox", FakeSandboxContext)
    echoed: list[str] = []
    check.run_check(network, echoed.append)
    [sandbox] = FakeSandboxContext.made[-1:]
    assert (sandbox.bin_dirs, sandbox.prefix) == ((str(tmp_path),), "nh-check")
    assert sandbox.calls == ["loopback", "ADD", f"reach {GATEWAY}", "CHECK", "DEL", "cleanup"]
    assert echoed[0] == f"network demo (CNI 1.0.0) from {tmp_path / 'net.d' / '10-demo.conflist'}"
    assert echoed[1] == f"  plugins  ok  bridge, host-local, loopback found in {tmp_path}"
    assert echoed[2] == "  netns    ok  nh-check-x created"
    assert echoed[-1] == "  cleanup  namespace nh-check-x and its interfaces removed"


def test_run_check_names_a_missing_plugin_before_making_a_namespace(monkeypatch, tmp_path) -> None:
    from nodehost.cni import CniNetwork, check

    conflist = {"cniVersion": "1.0.0", "name": "demo", "plugins": [{"type": "bridge"}]}
    network = CniNetwork("bridge", str(tmp_path), (str(tmp_path),), conflist, "10-demo.conflist")
    monkeypatch.setattr(check, "Sandbox", FakeSandboxContext)
    before = len(FakeSandboxContext.made)
    with pytest.raises(RuntimeFailure) as caught:
        check.run_check(network, lines().append)
    assert str(caught.value).startswith(
        f"network provider bridge: CNI plugins bridge, loopback not found in {tmp_path};"
    )
    assert len(FakeSandboxContext.made) == before


def test_a_list_without_check_support_skips_check() -> None:
    echoed: list[str] = []
    sandbox = FakeSandbox()
    exercise(sandbox, network("0.3.1", loopback=False), echoed.append)
    assert sandbox.calls == ["ADD", f"reach {GATEWAY}", "DEL"]
    assert "  CHECK    ok  skipped (CNI < 0.4.0 or disableCheck)" in echoed


def test_the_add_step_describes_the_interface_and_its_gateway() -> None:
    echoed: list[str] = []
    exercise(FakeSandbox(), network(), echoed.append)
    [add] = [line for line in echoed if line.split()[0] == "ADD"]
    assert add.startswith(f"  ADD      ok  eth0 {ADDRESS} gateway {GATEWAY} (") and add.endswith(
        " ms)"
    )


@pytest.mark.parametrize(
    ("sandbox", "ips", "message"),
    [
        (FakeSandbox(up={"eth0"}), None,
         "plugin loopback (ADD) succeeded but lo is not up with 127.0.0.1"),
        (FakeSandbox(addresses_of={"lo": ["127.0.0.1/8"]}), (),
         "the chain's ADD gave eth0 no address"),
        (FakeSandbox(addresses_of={"lo": ["127.0.0.1/8"], "eth0": ["10.244.7.9/24", "fd00::9/64"]}),
         ((ADDRESS, GATEWAY),),
         "eth0 inside the namespace lacks 10.244.7.5/24 (has 10.244.7.9/24, fd00::9/64)"),
        (FakeSandbox(addresses_of={"lo": ["127.0.0.1/8"]}), ((ADDRESS, GATEWAY),),
         "eth0 inside the namespace lacks 10.244.7.5/24 (has nothing)"),
        (FakeSandbox(up={"lo"}), ((ADDRESS, GATEWAY),), "eth0 inside the namespace is down"),
    ],
)  # fmt: skip
def test_each_failure_is_one_exact_message(sandbox, ips, message) -> None:
    with pytest.raises(RuntimeFailure) as caught:
        if ips is None:
            check_loopback(sandbox, lines().append)
        else:
            check_inside(sandbox, attachment(ips), lines().append)
    assert str(caught.value) == message


def test_the_loopback_step_lists_lo_s_addresses() -> None:
    echoed: list[str] = []
    check_loopback(FakeSandbox(addresses_of={"lo": ["127.0.0.1/8", "::1/128"]}), echoed.append)
    assert echoed == ["  loopback ok  lo up with 127.0.0.1/8, ::1/128"]


def test_an_attachment_is_described_with_every_address_and_gateway() -> None:
    from nodehost.cni.check import describe

    both = attachment(((ADDRESS, GATEWAY), ("fd00::5/64", None)))
    assert describe(both) == f"eth0 {ADDRESS} gateway {GATEWAY}, fd00::5/64 gateway -"
    assert describe(attachment(())) == "eth0 no addresses"


# The layer-2 data path: the master link checked first, then a second pod on the same master
# reaches the first (the host cannot reach pods through its own master link).

PEER_ADDRESS = "10.244.7.6/24"


@dataclass
class FakeL2Sandbox(FakeSandbox):
    """A sandbox whose siblings are second pods; ``peer_source`` is where a peer's TCP came from."""

    name: str = "nh-check-a"
    peer_source: str | None = None
    siblings: list[FakeL2Sandbox] = field(default_factory=list)
    reached: list[tuple[str, str]] = field(default_factory=list)
    ips: tuple[tuple[str, str | None], ...] = ((ADDRESS, None),)

    def attach(self, conflist) -> Attachment:
        self.calls.append("ADD")
        return attachment(self.ips, conflist=conflist)

    def sibling(self) -> FakeL2Sandbox:
        peer = FakeL2Sandbox(
            addresses_of={"lo": ["127.0.0.1/8"], "eth0": [PEER_ADDRESS]},
            name="nh-check-b",
            ips=((PEER_ADDRESS, None),),
        )
        peer.peer_source = self.peer_source or str(ipaddress.ip_interface(PEER_ADDRESS).ip)
        self.siblings.append(peer)
        return peer

    def __enter__(self) -> FakeL2Sandbox:
        self.calls.append("open")
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append("close")

    def reach_peer(self, peer: FakeL2Sandbox, address: str) -> str:
        self.reached.append((peer.name, address))
        assert self.peer_source is not None
        return self.peer_source


def layer2_network(*, mtu: int | None = None, isolation: str | None = None) -> CniNetwork:
    from nodehost.pluginhost.records import Topology

    conflist = {"cniVersion": "1.0.0", "name": "demo", "plugins": [{"type": "macvlan"}]}
    return CniNetwork("l2demo", "/nonexistent", ("/nonexistent",), conflist, "10-demo.conflist",
                      master="eth9", topology=Topology.L2, mtu=mtu, isolation=isolation)  # fmt: skip


@pytest.fixture
def master_checks(monkeypatch) -> list[tuple[str, str]]:
    """The layer-2 checks of the master link, recorded: ``(check, who)`` per call."""
    from nodehost.cni import hostnet, layer2

    seen: list[tuple[str, str]] = []

    def check_master(network, who):
        seen.append(("master", who))
        return hostnet.LinkState(network.master, "dummy", up=True, carrier=True, mtu=9000)

    def check_pods_on_master(network, who):
        seen.append(("pods", who))
        return ["10.244.7.0/24 on eth9", "10.244.8.0/24 on eth9"]

    monkeypatch.setattr(layer2, "check_master", check_master)
    monkeypatch.setattr(layer2, "check_pods_on_master", check_pods_on_master)
    return seen


def test_layer2_checks_the_master_then_a_second_pod_reaches_the_first(master_checks) -> None:
    echoed: list[str] = []
    sandbox = FakeL2Sandbox()
    exercise(sandbox, layer2_network(mtu=1450), echoed.append)
    assert master_checks == [("master", "network provider l2demo"),
                             ("pods", "network provider l2demo")]  # fmt: skip
    [peer] = sandbox.siblings
    assert peer.reached == [("nh-check-a", "10.244.7.5")]
    assert sandbox.calls == ["loopback", "ADD", "CHECK", "DEL"]
    assert peer.calls == ["open", "loopback", "ADD", "CHECK", "DEL", "close"]
    steps = [line.split()[0] for line in echoed]
    assert steps == ["master", "pod-cidr", "pod-cidr", "loopback", "ADD", "address", "netns",
                     "loopback#2", "ADD#2", "address#2", "peer", "CHECK#2", "DEL#2",
                     "CHECK", "DEL"]  # fmt: skip
    assert echoed[0] == "  master   ok  eth9 is up, MTU 9000 (pods: 1450)"
    assert echoed[1:3] == ["  pod-cidr ok  10.244.7.0/24 on eth9",
                           "  pod-cidr ok  10.244.8.0/24 on eth9"]  # fmt: skip
    assert echoed[6] == "  netns    ok  nh-check-b created (a second pod on eth9)"
    assert echoed[10] == "  peer     ok  TCP from 10.244.7.6 to 10.244.7.5 across eth9"


def test_the_master_line_says_default_when_the_network_sets_no_mtu(master_checks) -> None:
    echoed: list[str] = []
    exercise(FakeL2Sandbox(), layer2_network(), echoed.append)
    assert echoed[0] == "  master   ok  eth9 is up, MTU 9000 (pods: default)"


def test_a_peer_connection_from_another_source_fails(master_checks) -> None:
    sandbox = FakeL2Sandbox(peer_source="10.244.7.99")
    with pytest.raises(RuntimeFailure) as caught:
        exercise(sandbox, layer2_network(), lines().append)
    assert (
        str(caught.value)
        == "the connection to 10.244.7.5 came from 10.244.7.99, not from 10.244.7.6"
    )
    [peer] = sandbox.siblings
    assert "CHECK" not in peer.calls and "DEL" not in peer.calls


def test_an_isolated_layer2_network_skips_the_peer_step(master_checks) -> None:
    echoed: list[str] = []
    sandbox = FakeL2Sandbox()
    exercise(sandbox, layer2_network(isolation="macvlan mode private"), echoed.append)
    assert sandbox.siblings == []
    assert "  peer     ok  skipped: macvlan mode private" in echoed
    assert sandbox.calls == ["loopback", "ADD", "CHECK", "DEL"]


def test_a_layer2_pod_without_an_address_to_reach_fails(master_checks) -> None:
    sandbox = FakeL2Sandbox(ips=())
    with pytest.raises(RuntimeFailure) as caught:
        exercise(sandbox, layer2_network(), lines().append)
    assert str(caught.value) == "the chain's ADD gave the pod no address to reach"
    assert sandbox.siblings == []


def test_the_plugins_line_names_every_binary_directory(monkeypatch, tmp_path) -> None:
    from nodehost.cni import CniNetwork, check

    first, second = tmp_path / "a", tmp_path / "b"
    for folder, plugin in ((first, "bridge"), (second, "loopback")):
        folder.mkdir()
        (folder / plugin).write_text("#!/bin/sh\n")
        (folder / plugin).chmod(0o755)
    conflist = {"cniVersion": "1.0.0", "name": "demo", "plugins": [{"type": "bridge"}]}
    network = CniNetwork(
        "bridge", str(tmp_path), (str(first), str(second)), conflist, "10-d.conflist"
    )
    monkeypatch.setattr(check, "Sandbox", FakeSandboxContext)
    echoed: list[str] = []
    check.run_check(network, echoed.append)
    assert echoed[1] == f"  plugins  ok  bridge, loopback found in {first}, {second}"


def test_add_check_and_del_report_how_long_each_took(monkeypatch) -> None:
    from nodehost.cni import check

    clock = iter([10.0, 10.25, 20.0, 20.003, 30.0, 31.5])
    monkeypatch.setattr(check.time, "monotonic", lambda: next(clock))
    echoed: list[str] = []
    exercise(FakeSandbox(), network(loopback=False), echoed.append)
    assert echoed[0] == f"  ADD      ok  eth0 {ADDRESS} gateway {GATEWAY} (250 ms)"
    assert echoed[3:] == ["  CHECK    ok  3 ms", "  DEL      ok  1500 ms"]


def test_every_missing_address_is_named_and_every_present_one_listed() -> None:
    sandbox = FakeSandbox(addresses_of={"eth0": ["10.244.7.9/24"]})
    both = attachment(((ADDRESS, GATEWAY), ("fd00::5/64", None)))
    with pytest.raises(RuntimeFailure) as caught:
        check_inside(sandbox, both, lines().append)
    assert str(caught.value) == (
        "eth0 inside the namespace lacks 10.244.7.5/24, fd00::5/64 (has 10.244.7.9/24)"
    )
    echoed: list[str] = []
    check_inside(FakeSandbox(addresses_of={"eth0": [ADDRESS, "fd00::5/64"]}), both, echoed.append)
    assert echoed == [f"  address  ok  eth0 is up inside the namespace with {ADDRESS}, fd00::5/64"]
