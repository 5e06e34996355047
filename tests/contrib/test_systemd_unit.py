"""The systemd unit in contrib/: valid, a notify service, and a production node's settings."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "contrib" / "systemd" / "nodehost.service"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # keep systemd's key case
    parser.read(UNIT)
    return parser


def service_values(key: str) -> list[str]:
    """Every value of a key that may repeat (configparser keeps only the last)."""
    pattern = re.compile(rf"^{key}=(.*)$")
    return [m.group(1) for line in UNIT.read_text().splitlines() if (m := pattern.match(line))]


def test_unit_is_type_notify_and_stops_the_agents_only() -> None:
    service = unit()["Service"]
    assert service["Type"] == "notify"
    assert service["NotifyAccess"] == "main"
    assert service["KillMode"] == "process"  # containers and their shims outlive a restart
    assert service["Delegate"] == "yes"


def test_an_invalid_config_or_usage_is_not_restarted_every_few_seconds() -> None:
    service = unit()["Service"]
    assert service["Restart"] == "always"
    assert set(service["RestartPreventExitStatus"].split()) == {"2", "255"}


def test_reload_is_a_sighup_to_nodehost_alone() -> None:
    assert unit()["Service"]["ExecReload"] == "/bin/kill -HUP $MAINPID"


def test_start_timeout_outlasts_the_default_bootstrap_timeout() -> None:
    from nodehost.cli.start import start

    default = next(p for p in start.params if p.name == "bootstrap_timeout").default
    assert default == "1h"
    minutes = re.fullmatch(r"(\d+)min", unit()["Service"]["TimeoutStartSec"])
    assert minutes and int(minutes.group(1)) > 60


def test_limits_are_those_k3s_sets() -> None:
    service = unit()["Service"]
    assert service["LimitNOFILE"] == "1048576"
    assert service["LimitNPROC"] == service["LimitCORE"] == service["TasksMax"] == "infinity"


def test_operator_settings_come_from_an_optional_environment_file_of_start_flags() -> None:
    from nodehost.cli.start import environment_variable, start

    assert unit()["Service"]["EnvironmentFile"] == "-/etc/default/nodehost"
    known = {environment_variable(p) for p in start.params if p.param_type_name == "option"}
    names = [value.split("=", 1)[0] for value in service_values("Environment")]
    assert names and set(names) <= known, set(names) - known


def test_exec_start_is_where_the_readme_installs_nodehost() -> None:
    readme = (ROOT / "README.rst").read_text()
    venv = re.search(r"python3 -m venv (/\S+) && \1/bin/pip install", readme)
    assert venv, "the README's install line"
    assert unit()["Service"]["ExecStart"].split()[:2] == [f"{venv.group(1)}/bin/nodehost", "start"]


def test_the_units_install_line_is_the_readmes() -> None:
    readme = (ROOT / "README.rst").read_text()
    line = re.search(r"python3 -m venv /opt/nodehost && /opt/nodehost/bin/pip install \S+", readme)
    assert line, "the README's install line"
    comments = [text for text in UNIT.read_text().splitlines() if text.startswith("#")]
    header = " ".join(text.lstrip("# ") for text in comments)
    assert line.group(0) in header


def test_unit_start_command_is_accepted_by_nodehost() -> None:
    argv = unit()["Service"]["ExecStart"].split()[1:]
    nodehost = Path(sys.executable).parent / "nodehost"
    done = subprocess.run([str(nodehost), *argv, "--help"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.needs("systemd-analyze")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path) -> None:
    nodehost = Path(sys.executable).parent / "nodehost"
    text = UNIT.read_text().replace("/opt/nodehost/bin/nodehost", str(nodehost))
    copy = tmp_path / "nodehost.service"
    copy.write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "nodehost.service" not in done.stderr, done.stderr  # no warning about the unit
