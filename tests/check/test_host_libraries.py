"""The host libraries checks share, and the kernel checks of the pod network, on this host."""

from __future__ import annotations

import json
import os
import socket

import pytest

from nodehost.check.links import LINK_ARGUMENTS, probe_link_types
from nodehost.check.ports import bind_conflicts
from nodehost.check.space import space_of


def test_a_listener_on_the_wildcard_conflicts_with_a_bind_of_any_address() -> None:
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        [holder] = bind_conflicts("127.0.0.1", port)
        assert holder.pid == os.getpid()
        assert bind_conflicts("0.0.0.0", port)


def test_a_listener_on_one_address_leaves_another_free() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert bind_conflicts("127.0.0.2", port) == ()
        assert bind_conflicts("0.0.0.0", port)  # a wildcard bind would fail


def test_space_of_a_folder_not_made_yet_is_its_nearest_parents(tmp_path) -> None:
    space = space_of(str(tmp_path / "a" / "b"))
    assert space.measured == str(tmp_path)
    assert 0 < space.free_bytes <= space.total_bytes


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_a_link_type_the_kernel_lacks_is_an_error_naming_it() -> None:
    from nodehost.plugins.sdn.checks import link_types_check

    results = probe_link_types(list(LINK_ARGUMENTS))
    lacking = [kind for kind, why in results.items() if why is not None]
    if not lacking:
        pytest.skip("this kernel makes every link type; a missing one cannot be provoked here")
    assert results["veth"] is None  # the probe itself works
    line = link_types_check(["veth", *lacking])
    assert line.result.value == "error"
    assert all(f"{kind} (" in line.found for kind in lacking)
    assert line.fix.startswith(f"modprobe {' '.join(lacking)}")


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_the_link_types_a_network_makes_are_proved() -> None:
    from nodehost.plugins.sdn.checks import link_types_check

    line = link_types_check(["bridge", "veth"])
    assert (line.result.value, line.found) == (
        "ok",
        "made bridge, veth in a throw-away network namespace",
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace of its own needs root")
def test_forwarding_off_for_a_routed_network_is_an_error() -> None:
    """In a network namespace made for the test, forwarding turned off there (the host's own
    setting is not touched), the check reads what the kernel says."""
    import subprocess
    import sys

    code = (
        "import json; from nodehost.plugins.sdn.checks import ip_forward_check, "
        "ipv6_forward_check; print(json.dumps(ip_forward_check([{'type': 'ptp'}]).as_dict())); "
        "print(json.dumps(ipv6_forward_check().as_dict()))"
    )
    script = (
        "echo 0 > /proc/sys/net/ipv4/ip_forward && "
        "echo 0 > /proc/sys/net/ipv6/conf/all/forwarding && "
        f'exec {sys.executable} -c "{code}"'
    )
    done = subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    v4, v6 = (json.loads(line) for line in done.stdout.splitlines())
    assert v4["result"] == "error" and v4["fix"].startswith("sysctl -w net.ipv4.ip_forward=1")
    assert "IPv4 forwarding is off" in v4["found"]
    assert v6["result"] == "error" and "IPv6 forwarding is off" in v6["found"]


def test_forwarding_off_is_fine_when_the_bridge_plugin_turns_it_on(tmp_path) -> None:
    """The CNI bridge plugin with ``isGateway`` enables forwarding itself at the first pod."""
    from nodehost.plugins.sdn.checks import ip_forward_check

    off = tmp_path / "ip_forward"  # a sysctl file as the kernel shows forwarding off
    off.write_text("0\n")
    assert ip_forward_check([{"type": "bridge", "isGateway": True}], str(off)).result.value == "ok"
    assert ip_forward_check([{"type": "bridge"}], str(off)).result.value == "error"


def test_ipv6_forwarding_is_checked_only_for_a_network_with_ipv6_pods() -> None:
    from nodehost.plugins.sdn.checks import _has_ipv6_pods

    v4 = {"type": "bridge", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.1.0.0/24"}]]}}
    dual = {
        "type": "bridge",
        "ipam": {"ranges": [[{"subnet": "10.1.0.0/24"}], [{"subnet": "fd00:10::/64"}]]},
    }
    assert not _has_ipv6_pods([v4]) and _has_ipv6_pods([dual])
