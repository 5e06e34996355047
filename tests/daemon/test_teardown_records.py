"""Teardown undoes what components recorded: their programs' cleanups, the mounts of their roots."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.component import TeardownSpec

NODEHOST = str(Path(sys.executable).parent / "nodehost")


def record(state: Path, component: str, spec: TeardownSpec) -> None:
    spec_file = spec.file(str(state / component))
    Path(spec_file.path).parent.mkdir(parents=True)
    Path(spec_file.path).write_bytes(spec_file.content)


def teardown(
    state: Path, path: str, before: str = "", after: str = ""
) -> subprocess.CompletedProcess[str]:
    """``nodehost teardown`` in a private mount namespace (``before``/``after``: shell lines)."""
    script = f'{before}\n"$@"; status=$?\n{after}\nexit $status'
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
         NODEHOST, "teardown", "--state-dir", str(state), "--grace", "1s"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PATH": path},
    )  # fmt: skip


@pytest.mark.needs("mount-namespace", "nodehost-script")
def test_recorded_cleanup_command_runs_where_the_program_is_installed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    record(state, "proxy", TeardownSpec(commands=(("kube-proxy", "--cleanup"),)))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kube-proxy").symlink_to(Path(sys.executable).parent / "nodehost-standin-kube-proxy")
    installed = teardown(state, f"{bin_dir}:{os.environ['PATH']}")
    assert installed.returncode == 0, installed.stderr
    assert f"ran kube-proxy --cleanup ({bin_dir / 'kube-proxy'})" in installed.stdout
    absent = teardown(state, os.environ["PATH"])
    assert absent.returncode == 0, absent.stderr
    assert "kube-proxy" not in absent.stdout


@pytest.mark.needs("mount-namespace", "nodehost-script")
def test_recorded_roots_are_unmounted_and_their_data_left(tmp_path: Path) -> None:
    state, root = tmp_path / "state", tmp_path / "kubelet-root"
    record(state, "kubelet", TeardownSpec(unmount_below=(str(root),)))
    volume, source = root / "pods" / "p" / "volumes" / "pv", tmp_path / "pv-data"
    volume.mkdir(parents=True)
    source.mkdir()
    (source / "data.txt").write_text("kept\n")
    (root / "pods" / "p" / "etc-hosts").write_text("kept too\n")
    done = teardown(
        state,
        os.environ["PATH"],
        before=f"mount --bind {source} {volume}",
        after=f"grep -c ' {root}' /proc/self/mountinfo > {tmp_path}/mounts-left",
    )
    assert done.returncode == 0, done.stderr
    assert f"unmounted {volume}" in done.stdout
    assert (tmp_path / "mounts-left").read_text().strip() == "0"
    assert (source / "data.txt").read_text() == "kept\n"
    assert (root / "pods" / "p" / "etc-hosts").exists()
