"""The serial file: Origin's format, locked increments, clear errors."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from nodehost.errors import PKIError
from nodehost.pki.serial import format_serial, parse_serial, read_serial, reserve_serials


@pytest.mark.parametrize(
    ("number", "text"), [(1, b"01"), (10, b"0A"), (255, b"FF"), (256, b"0100"), (4096, b"1000")]
)
def test_serial_is_upper_case_hex_of_even_length(number: int, text: bytes) -> None:
    assert format_serial(number) == text


@pytest.mark.parametrize(("text", "number"), [(b"00", 1), (b"0A\n", 10), (b"ff", 255), (b"1", 1)])
def test_serial_parses_hex_and_counts_below_one_as_one(text: bytes, number: int) -> None:
    assert parse_serial(text, "ca.serial.txt") == number


def test_new_ca_serial_file_issues_two_first(tmp_path: Path) -> None:
    serial = tmp_path / "ca.serial.txt"
    serial.write_bytes(b"00")
    assert list(reserve_serials(serial)) == [2]
    assert list(reserve_serials(serial, 2)) == [3, 4]
    assert serial.read_bytes() == b"04"


def test_update_keeps_the_file_mode(tmp_path: Path) -> None:
    serial = tmp_path / "ca.serial.txt"
    serial.write_bytes(b"00")
    serial.chmod(0o640)
    reserve_serials(serial)
    assert stat.S_IMODE(serial.stat().st_mode) == 0o640


def test_missing_serial_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PKIError, match=r"cannot read serial file .*ca.serial.txt: No such file"):
        read_serial(tmp_path / "ca.serial.txt")


def test_garbage_serial_file_is_an_error_not_a_restart(tmp_path: Path) -> None:
    serial = tmp_path / "ca.serial.txt"
    serial.write_bytes(b"not-hex")
    with pytest.raises(PKIError, match="does not hold a hexadecimal number: 'not-hex'"):
        reserve_serials(serial)
    assert serial.read_bytes() == b"not-hex"


def test_concurrent_threads_get_distinct_serials(tmp_path: Path) -> None:
    serial = tmp_path / "ca.serial.txt"
    serial.write_bytes(b"00")
    issued: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(10):
            value = reserve_serials(serial)[0]
            with lock:
                issued.append(value)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(issued) == list(range(2, 82))
    assert read_serial(serial) == 81
