"""DIR keeps what the first start chose: ports and token, private, and refused when unreadable."""

from __future__ import annotations

import contextlib
import json
import socket
import stat
from pathlib import Path

import pytest

from nodehost.errors import RuntimeFailure
from nodehost.plugins.localcluster.layout import (
    ClusterSettings,
    Layout,
    free_port,
    read_settings,
    settings_for,
)


def test_the_first_start_chooses_and_later_starts_reuse(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "lc")
    assert read_settings(layout) is None
    first = settings_for(layout)
    assert settings_for(layout) == first
    assert read_settings(layout) == first
    assert len({first.apiserver_port, first.dns_port, first.kubelet_port}) == 3


def test_the_folder_and_the_settings_are_private(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "lc")
    settings_for(layout)
    assert stat.S_IMODE(layout.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(layout.settings_file.stat().st_mode) == 0o600


def test_each_cluster_gets_its_own_bootstrap_token(tmp_path: Path) -> None:
    one = settings_for(Layout(tmp_path / "one")).token
    two = settings_for(Layout(tmp_path / "two")).token
    assert one != two
    token_id, secret = one.split(".")
    assert (len(token_id), len(secret)) == (6, 16)


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"apiserver_port": 1}', None],
    ids=["not-json", "not-a-mapping", "missing-keys", "wrong-type"],
)
def test_unusable_settings_say_which_file_and_how_to_start_over(tmp_path: Path, content) -> None:
    layout = Layout(tmp_path / "lc")
    chosen = settings_for(layout)
    if content is None:
        content = json.dumps({**json.loads(layout.settings_file.read_text()), "dns_port": "53"})
    layout.settings_file.write_text(content)
    with pytest.raises(RuntimeFailure) as raised:
        settings_for(layout)
    assert str(layout.settings_file) in str(raised.value)
    assert f"remove {layout.directory} to start over" in str(raised.value)
    assert chosen.token not in str(raised.value)


def test_the_ports_chosen_for_a_cluster_are_distinct_even_when_the_kernel_repeats_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel may offer a port again as soon as it is free; here it always offers the
    last one first.  Each choice stays bound until all are made, so no port comes twice."""
    real_socket = socket.socket
    offered: list[int] = []

    class Repeating(real_socket):
        def bind(self, address: tuple[str, int]) -> None:
            if self.type == socket.SOCK_STREAM and address[1] == 0 and offered:
                try:
                    super().bind((address[0], offered[-1]))
                except OSError:  # still bound: the kernel picks another
                    super().bind(address)
            else:
                super().bind(address)
            if self.type == socket.SOCK_STREAM:
                offered.append(self.getsockname()[1])

    monkeypatch.setattr("nodehost.plugins.localcluster.layout.socket.socket", Repeating)
    chosen = ClusterSettings.choose()
    ports = [chosen.apiserver_port, chosen.dns_port, chosen.kubelet_port,
             chosen.kubelet_healthz_port, chosen.proxy_healthz_port]  # fmt: skip
    assert len(set(ports)) == 5


def test_the_dns_port_is_free_for_udp_and_tcp() -> None:
    with contextlib.ExitStack() as held:
        port = free_port(held, udp_too=True)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, socket.socket() as tcp:
        udp.bind(("127.0.0.1", port))
        tcp.bind(("127.0.0.1", port))


def test_a_port_never_free_for_udp_is_a_runtime_failure_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_socket = socket.socket

    class UdpTaken(real_socket):
        def bind(self, address: object) -> None:
            if self.type == socket.SOCK_DGRAM:
                raise OSError(98, "Address already in use")
            super().bind(address)

    monkeypatch.setattr("nodehost.plugins.localcluster.layout.socket.socket", UdpTaken)
    with (
        pytest.raises(
            RuntimeFailure, match=r"no port on 127\.0\.0\.1 is free for both TCP and UDP"
        ),
        contextlib.ExitStack() as held,
    ):
        free_port(held, udp_too=True)
