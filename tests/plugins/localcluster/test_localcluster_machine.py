"""What runs for real on this machine, and the one line that says why when it cannot."""

from __future__ import annotations

from nodehost.plugins.localcluster.machine import Machine

EVERYTHING = Machine(root=True, missing_cni_plugins=(), cni_bin_dirs=("/cni",), missing_programs=())


def test_root_with_the_parts_runs_everything() -> None:
    assert EVERYTHING.no_bridge_reason() is None
    assert EVERYTHING.no_runtime_reason() is None


def test_without_root_neither_the_bridge_nor_containerd_runs_and_the_reason_says_root() -> None:
    user = Machine(root=False, missing_cni_plugins=(), cni_bin_dirs=("/cni",), missing_programs=())
    assert "not running as root: no bridge network" in (user.no_bridge_reason() or "")
    assert "not running as root: no container runtime" in (user.no_runtime_reason() or "")


def test_missing_cni_plugins_are_named_with_the_install_line() -> None:
    machine = Machine(True, ("bridge", "portmap"), ("/usr/lib/cni", "/opt/cni/bin"), ())
    reason = machine.no_bridge_reason() or ""
    assert "bridge, portmap are not in /usr/lib/cni, /opt/cni/bin" in reason
    assert "apt-get install containernetworking-plugins" in reason
    assert machine.no_runtime_reason() is None


def test_missing_containerd_is_named_with_the_install_line() -> None:
    machine = Machine(True, (), ("/cni",), ("containerd", "runc"))
    reason = machine.no_runtime_reason() or ""
    assert reason.startswith("containerd and runc not found on PATH")
    assert "apt-get install containerd runc" in reason
    assert machine.no_bridge_reason() is None


def test_the_probe_reads_this_machine(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    probed = Machine.probe()
    assert probed.missing_programs == ("containerd", "runc")
