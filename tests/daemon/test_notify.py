"""sd_notify: what a real service-manager socket receives from the host (and from systemd-notify)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest
from hostrun import healthz_component, wait_for

from nodehost.daemon.notify import Notifier


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_ready_1_arrives_only_when_every_component_is_ready(
    host_run, notify_receiver, abstract: bool
) -> None:
    receiver = notify_receiver(abstract)
    components = [
        healthz_component("kubelet", env={"NODEHOST_STANDIN_READY_DELAY": "0.3"}),
        healthz_component("proxy", after=["kubelet"]),
    ]
    run = host_run(components, env={"NOTIFY_SOCKET": receiver.address})
    wait_for(lambda: "READY=1" in receiver.lines(), what="READY=1")
    lines = receiver.lines()
    before_ready = lines[: lines.index("READY=1")]
    assert any(line.startswith("STATUS=waiting for kubelet: GET http://") for line in before_ready)
    assert set(run.hook_names("component_ready")) == {"kubelet", "proxy"}
    run.signal(signal.SIGTERM)
    assert run.wait() == 0
    wait_for(lambda: "STOPPING=1" in receiver.lines(), what="STOPPING=1")
    assert receiver.lines().count("READY=1") == 1


def test_watchdog_pings_while_healthy(host_run, notify_receiver) -> None:
    receiver = notify_receiver(False)
    run = host_run(
        [{"name": "sleeper", "argv": ["sleep", "600"]}],
        env={"NOTIFY_SOCKET": receiver.address, "WATCHDOG_USEC": "100000"},
    )
    wait_for(lambda: receiver.lines().count("WATCHDOG=1") >= 3, what="three WATCHDOG=1")
    run.signal(signal.SIGTERM)
    assert run.wait() == 0


def test_no_watchdog_for_another_pid(notify_receiver) -> None:
    receiver = notify_receiver(False)
    environ = {"NOTIFY_SOCKET": receiver.address, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"}
    assert Notifier.from_environ(environ).watchdog_interval() is None


def test_notifier_without_socket_sends_nothing() -> None:
    notifier = Notifier.from_environ({})
    assert not notifier.enabled
    assert notifier.ready("ready") is False
    assert notifier.sent == []


@pytest.mark.parametrize("abstract", [False, True], ids=["path", "abstract"])
def test_notifier_message_reaches_the_socket(notify_receiver, abstract: bool) -> None:
    receiver = notify_receiver(abstract)
    notifier = Notifier.from_environ({"NOTIFY_SOCKET": receiver.address})
    assert notifier.ready("2 components ready")
    wait_for(lambda: receiver.messages, what="a datagram")
    assert receiver.messages[0] == "READY=1\nSTATUS=2 components ready"
    notifier.close()


@pytest.mark.needs("systemd-notify")
def test_the_test_receiver_speaks_the_protocol_of_real_systemd_notify(notify_receiver) -> None:
    """The reference client: if systemd-notify's READY=1 gets through, so does the host's check."""
    receiver = notify_receiver(False)
    environment = {**os.environ, "NOTIFY_SOCKET": receiver.address}
    result = subprocess.run(
        ["systemd-notify", "--ready", "--status=reference"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    wait_for(lambda: "READY=1" in receiver.lines(), what="READY=1 from systemd-notify")
    assert "STATUS=reference" in receiver.lines()
