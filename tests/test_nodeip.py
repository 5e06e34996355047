"""The node IP library: what ``nodeIP`` may say, and the address it means on a host.

Choosing is tested on given addresses (pure), and reading the kernel in a
network namespace the test made (its own dummy link, addresses and default route).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from nodehost.cni import netns
from nodehost.nodeip import (
    LocalAddress,
    NodeIPError,
    NodeIPSyntaxError,
    parse_node_ip,
    resolve_node_ip,
)


def local(interface: str, address: str, prefix: int = 24) -> LocalAddress:
    return LocalAddress(interface, ipaddress.ip_address(address), prefix)


HOST = [
    local("lo", "127.0.0.1", 8),
    local("eth0", "fe80::1", 64),
    local("eth0", "10.1.0.5"),
    local("eth0", "fd00::5", 64),
    local("eth1", "192.168.7.2"),
]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "default"),
        ("10.1.0.5", "address"),
        ("fd00::5", "address"),
        ("iface:eth0", "interface"),
        ("cidr:10.0.0.0/8", "cidr"),
        ("cidr:fd00::/8", "cidr"),
    ],
)
def test_each_form_parses(text: str, kind: str) -> None:
    assert parse_node_ip(text).kind == kind


def test_a_dual_stack_pair_puts_ipv4_first_in_either_order() -> None:
    assert [str(a) for a in parse_node_ip("fd00::5,10.1.0.5").addresses] == ["10.1.0.5", "fd00::5"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "must be a valid IP"),
        ("0.0.0.0", "cannot be an unspecified IP"),
        ("10.0.0.1,10.0.0.2", "a dual-stack pair needs one IPv4 and one IPv6 address"),
        ("10.0.0.1,fd00::1,10.0.0.3", "at most two addresses, one IPv4 and one IPv6"),
        ("iface:", "iface: needs an interface name (1-15 characters, no '/')"),
        ("iface:a-name-far-too-long", "iface: needs an interface name (1-15 characters, no '/')"),
        ("cidr:10.0.0/x", "cidr: needs a network such as 10.0.0.0/8"),
    ],
)
def test_bad_forms_say_why(text: str, message: str) -> None:
    with pytest.raises(NodeIPSyntaxError) as caught:
        parse_node_ip(text)
    assert str(caught.value) == message


def test_an_address_on_a_local_interface_is_chosen_as_written() -> None:
    chosen = resolve_node_ip("fd00::5,10.1.0.5", HOST, {})
    assert (chosen.value, chosen.chosen_by) == ("10.1.0.5,fd00::5", "nodeIP")


def test_an_address_on_no_local_interface_names_it_and_the_candidates() -> None:
    with pytest.raises(NodeIPError) as caught:
        resolve_node_ip("10.9.9.9", HOST, {})
    assert str(caught.value) == (
        "nodeIP 10.9.9.9 is not an address of any local interface; candidates: "
        "10.1.0.5 (eth0), fd00::5 (eth0), 192.168.7.2 (eth1)"
    )


def test_an_interface_gives_its_first_ipv4_address_never_a_link_local_one() -> None:
    assert resolve_node_ip("iface:eth0", HOST, {}).value == "10.1.0.5"
    ipv6_only = [a for a in HOST if a.address.version == 6]
    assert resolve_node_ip("iface:eth0", ipv6_only, {}).value == "fd00::5"


def test_a_cidr_gives_the_first_local_address_inside_it() -> None:
    chosen = resolve_node_ip("cidr:192.168.0.0/16", HOST, {})
    assert (chosen.value, chosen.chosen_by) == (
        "192.168.7.2",
        "the first local address in 192.168.0.0/16",
    )


def test_a_selector_matching_nothing_lists_the_candidates() -> None:
    with pytest.raises(
        NodeIPError, match=r"nodeIP iface:eth9 matches no local address; candidates: 10\.1\.0\.5"
    ):
        resolve_node_ip("iface:eth9", HOST, {})


def test_unset_is_the_ipv4_default_route_source_else_the_ipv6_one() -> None:
    assert resolve_node_ip("", HOST, {4: "192.168.7.2", 6: "fd00::5"}).value == "192.168.7.2"
    assert resolve_node_ip("", HOST, {6: "fd00::5"}).value == "fd00::5"
    with pytest.raises(NodeIPError, match="no default route"):
        resolve_node_ip("", HOST, {})


# --- the kernel, in a namespace of the test's own ----------------------------------------

READ = """
import json
from nodehost.nodeip import default_route_sources, local_addresses, resolve_node_ip
print(json.dumps({
    "addresses": [[a.interface, str(a.address), a.prefix] for a in local_addresses()],
    "default": {str(k): v for k, v in default_route_sources().items()},
    "unset": resolve_node_ip("").value if default_route_sources() else None,
}))
"""


@pytest.fixture
def namespace() -> Iterator[str]:
    name = netns.unique_name("nh-host")
    netns.create(name)
    try:
        yield name
    finally:
        netns.delete(name)


def ip(name: str, *arguments: str) -> None:
    netns.run_ip(["-n", name, *arguments], " ".join(arguments))


def add_link(name: str, link: str = "nhd0") -> None:
    """An up link of the namespace's own: one end of a veth pair whose peer stays there too
    (this kernel may have no dummy driver)."""
    ip(name, "link", "add", link, "type", "veth", "peer", "name", f"{link}p")
    ip(name, "link", "set", f"{link}p", "up")
    ip(name, "link", "set", link, "up")


def read_kernel(name: str) -> dict[str, object]:
    done = subprocess.run(
        netns.exec_argv(name, [sys.executable, "-c", READ]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.needs("root", "ip")
def test_the_kernel_is_read_over_netlink(namespace: str) -> None:
    ip(namespace, "link", "set", "lo", "up")
    add_link(namespace)
    ip(namespace, "addr", "add", "10.77.0.9/24", "dev", "nhd0")
    ip(namespace, "addr", "add", "10.77.0.8/24", "dev", "nhd0")
    ip(namespace, "addr", "add", "fd77::9/64", "dev", "nhd0", "nodad")
    ip(namespace, "route", "add", "default", "via", "10.77.0.1", "src", "10.77.0.8")
    found = read_kernel(namespace)
    addresses = {(i, a) for i, a, _ in found["addresses"]}  # type: ignore[union-attr]
    assert {("lo", "127.0.0.1"), ("nhd0", "10.77.0.9"), ("nhd0", "fd77::9")} <= addresses
    assert found["default"] == {"4": "10.77.0.8"}  # the route's src, not the first address
    assert found["unset"] == "10.77.0.8"


@pytest.mark.needs("root", "ip")
def test_a_tentative_address_is_not_yet_local(namespace: str) -> None:
    ip(namespace, "link", "add", "nhd0", "type", "veth", "peer", "name", "nhd0p")
    # On a link that is down, DAD cannot run: the address stays tentative.
    ip(namespace, "addr", "add", "fd77::7/64", "dev", "nhd0")
    ip(namespace, "addr", "add", "fd77::8/64", "dev", "nhd0", "nodad")
    found = read_kernel(namespace)
    listed = [a for _, a, _ in found["addresses"]]  # type: ignore[union-attr]
    assert "fd77::8" in listed and "fd77::7" not in listed
