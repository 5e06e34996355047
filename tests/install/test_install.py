"""``nodehost install``: the unit and the environment file, written once, kept when changed."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from servicerun import NODEHOST, ServiceRoot

from nodehost.install.files import is_nodehosts, packaged_unit, parse_environment

pytestmark = pytest.mark.needs("mount-namespace", "nodehost-script")

ROOT = Path(__file__).resolve().parents[2]


def flags(tmp_path: Path) -> list[str]:
    return [
        "--config",
        str(tmp_path / "node" / "node-config.yaml"),
        "--state-dir",
        str(tmp_path / "state"),
    ]


def service_lines(text: str) -> list[str]:
    """The unit's settings (no comments), ExecStart's program left out."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return ["ExecStart" if line.startswith("ExecStart=") else line for line in lines]


def test_install_writes_the_packaged_unit_running_this_nodehost(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    done = service_root.run("install", *flags(tmp_path))
    assert done.returncode == 0, done.stderr
    text = service_root.unit.read_text()
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_start == f"ExecStart={NODEHOST} start"
    assert service_lines(text) == service_lines(packaged_unit())  # the same hardening and limits
    assert is_nodehosts(text)
    assert stat.S_IMODE(service_root.unit.stat().st_mode) == 0o644


def test_contrib_unit_is_the_packaged_one() -> None:
    contrib = ROOT / "contrib" / "systemd" / "nodehost.service"
    assert contrib.read_text() == packaged_unit()


def test_install_writes_the_given_flags_only_as_variables(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    done = service_root.run("install", *flags(tmp_path), "--crash-loop-limit", "3", "--no-exec")
    assert done.returncode == 0, done.stderr
    variables = parse_environment(service_root.environment.read_text())
    assert variables == {
        "NODEHOST_CONFIG": str(tmp_path / "node" / "node-config.yaml"),
        "NODEHOST_STATE_DIR": str(tmp_path / "state"),
        "NODEHOST_CRASH_LOOP_LIMIT": "3",
        "NODEHOST_NO_EXEC": "1",
    }
    assert stat.S_IMODE(service_root.environment.stat().st_mode) == 0o600


def test_where_systemd_is_not_init_the_files_are_written_and_enabling_explained(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    done = service_root.run("install", *flags(tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"created {'/etc/systemd/system/nodehost.service'}" in done.stdout
    assert "created /etc/default/nodehost" in done.stdout
    assert "not enabled" in done.stdout
    assert "systemctl daemon-reload && systemctl enable --now nodehost" in done.stdout
    assert not (service_root.units / "multi-user.target.wants").exists()


def test_environment_file_gives_start_the_values_it_was_given(
    service_root: ServiceRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read by a shell as systemd's EnvironmentFile would be, the values reach start unchanged."""
    awkward = 'node-$HOME-"quoted"-`x`-\\'
    binaries = ["kubelet=/opt/a/kubelet", "kube-proxy=/opt/b/kube-proxy"]
    argv = ["install", "--hostname", awkward, "--binary", binaries[0], "--binary", binaries[1]]
    done = service_root.run(*argv)
    assert done.returncode == 0, done.stderr
    shell = subprocess.run(
        ["sh", "-c", '. "$1"; printf "%s\\0%s" "$NODEHOST_HOSTNAME" "$NODEHOST_BINARY"', "sh",
         str(service_root.environment)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    hostname, binary = shell.stdout.split("\0")
    assert hostname == awkward
    from nodehost.cli.start import start

    monkeypatch.setenv("NODEHOST_HOSTNAME", hostname)
    monkeypatch.setenv("NODEHOST_BINARY", binary)
    params = start.make_context("start", []).params
    assert params["hostname"] == awkward
    assert list(params["binaries"]) == binaries


def test_install_again_with_the_same_flags_changes_nothing(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    assert service_root.run("install", *flags(tmp_path)).returncode == 0
    before = (service_root.unit.stat().st_ino, service_root.environment.stat().st_ino)
    done = service_root.run("install", *flags(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "unchanged /etc/systemd/system/nodehost.service" in done.stdout
    assert "unchanged /etc/default/nodehost" in done.stdout
    assert (service_root.unit.stat().st_ino, service_root.environment.stat().st_ino) == before


def test_install_with_other_flags_updates_the_environment_file(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    assert service_root.run("install", *flags(tmp_path)).returncode == 0
    done = service_root.run("install", *flags(tmp_path), "--loglevel", "4")
    assert done.returncode == 0, done.stderr
    assert "updated /etc/default/nodehost" in done.stdout
    assert parse_environment(service_root.environment.read_text())["NODEHOST_LOGLEVEL"] == "4"


def test_a_locally_changed_unit_is_kept_unless_forced(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    assert service_root.run("install", *flags(tmp_path)).returncode == 0
    changed = service_root.unit.read_text().replace("RestartSec=5s", "RestartSec=1s")
    service_root.unit.write_text(changed)
    refused = service_root.run("install", *flags(tmp_path))
    assert refused.returncode == 1
    assert "/etc/systemd/system/nodehost.service was changed" in refused.stderr
    assert "--force" in refused.stderr
    assert service_root.unit.read_text() == changed
    forced = service_root.run("install", *flags(tmp_path), "--force")
    assert forced.returncode == 0, forced.stderr
    assert "updated /etc/systemd/system/nodehost.service" in forced.stdout
    assert "RestartSec=5s" in service_root.unit.read_text()


def test_a_locally_changed_environment_file_is_kept_unless_forced(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    assert service_root.run("install", *flags(tmp_path)).returncode == 0
    with service_root.environment.open("a") as stream:
        stream.write('HTTPS_PROXY="http://proxy:3128"\n')
    refused = service_root.run("install", *flags(tmp_path), "--loglevel", "2")
    assert refused.returncode == 1
    assert "/etc/default/nodehost was changed" in refused.stderr
    assert "HTTPS_PROXY" in service_root.environment.read_text()


def test_dry_run_prints_both_files_and_writes_nothing(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    done = service_root.run("install", "--dry-run", *flags(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "# /etc/systemd/system/nodehost.service\n" in done.stdout
    assert "# /etc/default/nodehost\n" in done.stdout
    assert f'NODEHOST_STATE_DIR="{tmp_path / "state"}"' in done.stdout
    assert f"ExecStart={NODEHOST} start" in done.stdout
    assert list(service_root.units.iterdir()) == list(service_root.defaults.iterdir()) == []


def test_flags_start_refuses_are_refused_before_any_file(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    done = service_root.run("install", "--ready-timeout", "soon")
    assert done.returncode == 2
    assert "--ready-timeout" in done.stderr
    done = service_root.run("install", "--write-flags")
    assert done.returncode == 2
    assert list(service_root.units.iterdir()) == []


@pytest.mark.needs("systemctl")
def test_where_systemd_is_init_install_runs_systemctl_and_reports_its_failure(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    """A faked /run/systemd/system and no manager: systemctl's own refusal, in one line."""
    done = service_root.run("install", *flags(tmp_path), systemd=True)
    assert done.returncode == 1
    assert "systemctl daemon-reload failed" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert service_root.unit.exists()  # written before systemd was asked; a rerun continues


@pytest.mark.needs("strace")
def test_an_install_killed_at_any_write_is_finished_by_the_next(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    """SIGKILL at the Nth write/rename/link, for every N until a run goes through: the next
    run leaves both files whole, and neither is ever half-written."""
    expected = None
    killed = 0
    for when in range(1, 40):
        for leftover in [*service_root.units.iterdir(), *service_root.defaults.iterdir()]:
            leftover.unlink()
        inject = f"write,rename,renameat,renameat2,link,linkat:signal=SIGKILL:when={when}"
        first = service_root.run(
            "install", *flags(tmp_path),
            wrapper=("strace", "-f", "-qq", "-o", "/dev/null", "-e", f"inject={inject}"),
        )  # fmt: skip
        for path in (service_root.unit, service_root.environment):
            assert not path.exists() or is_nodehosts(path.read_text()), (when, path)
        again = service_root.run("install", *flags(tmp_path))
        assert again.returncode == 0, (when, again.stderr)
        files = (service_root.unit.read_text(), service_root.environment.read_text())
        expected = expected or files
        assert files == expected, when
        strays = [p.name for p in service_root.units.iterdir() if p.name.startswith(".")]
        assert strays == [], (when, strays)  # a killed run's temporary files are cleared
        if first.returncode == 0:
            break
        killed += 1
    else:
        pytest.fail("install was killed at every step tried")
    assert killed >= 2, killed
