"""The systemd unit in contrib/ is valid and uses nodehost as a notify service."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "contrib" / "systemd" / "nodehost.service"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # keep systemd's key case
    parser.read(UNIT)
    return parser


def test_unit_is_type_notify_and_stops_through_nodehost() -> None:
    service = unit()["Service"]
    assert service["Type"] == "notify"
    assert service["NotifyAccess"] == "main"
    assert service["KillMode"] == "mixed"
    assert " start " in service["ExecStart"]


def test_unit_start_command_is_accepted_by_nodehost() -> None:
    argv = unit()["Service"]["ExecStart"].split()[1:]
    nodehost = Path(sys.executable).parent / "nodehost"
    done = subprocess.run([str(nodehost), *argv, "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.needs("systemd-analyze")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    nodehost = Path(sys.executable).parent / "nodehost"
    text = UNIT.read_text().replace("/usr/local/bin/nodehost", str(nodehost))
    copy = tmp_path / "nodehost.service"
    copy.write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
