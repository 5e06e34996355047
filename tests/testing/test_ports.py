"""``nodehost.testing.ports.free_port``: ports a test asks for are distinct."""

from __future__ import annotations

import socket

import pytest

from nodehost.testing import ports


def test_a_port_the_kernel_hands_out_twice_is_not_handed_out_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel may give the same free port to two binds in a row (here it is made to)."""
    given = iter([40001, 40001, 40001, 40002])

    class Probe:
        def __init__(self, *args: object) -> None:
            self.port = next(given)

        def __enter__(self) -> Probe:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def bind(self, address: tuple[str, int]) -> None:
            pass

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(ports, "_HANDED_OUT", type(ports._HANDED_OUT)(maxlen=8))
    monkeypatch.setattr(socket, "socket", Probe)
    assert [ports.free_port(), ports.free_port()] == [40001, 40002]


def test_many_ports_in_a_row_are_distinct_and_bindable() -> None:
    chosen = [ports.free_port() for _ in range(50)]
    assert len(set(chosen)) == 50
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", chosen[-1]))


def test_a_kernel_offering_only_used_ports_is_an_error_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ports, "_HANDED_OUT", type(ports._HANDED_OUT)([40001], maxlen=8))
    monkeypatch.setattr(socket.socket, "getsockname", lambda self: ("127.0.0.1", 40001))
    with pytest.raises(RuntimeError, match="only ports handed out lately"):
        ports.free_port()
