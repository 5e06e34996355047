"""``nodehost uninstall``: stop, tear down, unmount, remove; keep pod volume data; finish later."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from servicerun import NODEHOST, ServiceRoot

pytestmark = pytest.mark.needs("mount-namespace", "nodehost-script")


@dataclass
class Node:
    """An installed node's folders, and pod volumes to mount below its kubelet root."""

    tmp: Path

    @property
    def folder(self) -> Path:
        return self.tmp / "node"

    @property
    def state(self) -> Path:
        return self.tmp / "state"

    @property
    def kubelet_root(self) -> Path:
        return self.folder / "volumes"

    @property
    def pod(self) -> Path:
        return self.kubelet_root / "pods" / "p1" / "volumes"

    @property
    def emptydir_file(self) -> Path:
        return self.pod / "kubernetes.io~empty-dir" / "data" / "file.txt"

    @property
    def persistent(self) -> Path:
        """What a persistent volume shows: outside the kubelet root, bind-mounted into it."""
        return self.tmp / "pv-source"

    @property
    def bind_point(self) -> Path:
        return self.pod / "kubernetes.io~csi" / "pv" / "mount"

    @property
    def busy_point(self) -> Path:
        return self.pod / "kubernetes.io~secret" / "token"

    def create(self) -> None:
        self.folder.mkdir()
        (self.folder / "node-config.yaml").write_text(
            "apiVersion: v1\nkind: NodeConfig\nvolumeDirectory: volumes\n"
        )
        (self.folder / "node.kubeconfig").write_text("{}\n")
        self.state.mkdir()
        (self.state / "kubelet").mkdir()
        self.emptydir_file.parent.mkdir(parents=True)
        self.emptydir_file.write_text("pod data\n")
        self.persistent.mkdir()
        (self.persistent / "pv.txt").write_text("persistent data\n")
        self.bind_point.mkdir(parents=True)
        self.busy_point.mkdir(parents=True)

    def flags(self) -> list[str]:
        return ["--config", str(self.folder / "node-config.yaml"), "--state-dir", str(self.state)]

    def mount_volumes(self) -> str:
        """Shell commands: the bind mount, and a tmpfs kept busy by a process's working folder."""
        return (
            f"mount --bind {self.persistent} {self.bind_point}\n"
            f"mount -t tmpfs nh-life-secret {self.busy_point}\n"
            f"(cd {self.busy_point} && exec sleep 300) & echo $! > {self.tmp}/busy.pid\n"
        )

    def after(self, then: str = "") -> str:
        """Shell commands: ``then``, record the mounts, end the busy process."""
        return (
            f"{then}\ncat /proc/self/mountinfo > {self.tmp}/mounts\n"
            f"kill $(cat {self.tmp}/busy.pid)\n"
        )

    def mounts_left(self) -> list[str]:
        text = (self.tmp / "mounts").read_text()
        return [line for line in text.splitlines() if str(self.kubelet_root) in line]


@pytest.fixture
def node(service_root: ServiceRoot, tmp_path: Path) -> Node:
    node = Node(tmp_path)
    node.create()
    done = service_root.run("install", *node.flags())
    assert done.returncode == 0, done.stderr
    return node


def test_uninstall_removes_the_service_and_unmounts_but_keeps_pod_volume_data(
    service_root: ServiceRoot, node: Node
) -> None:
    done = service_root.run("uninstall", before=node.mount_volumes(), after=node.after())
    assert done.returncode == 0, done.stderr
    assert not service_root.unit.exists() and not service_root.environment.exists()
    assert "removed /etc/systemd/system/nodehost.service" in done.stdout
    assert "removed /etc/default/nodehost" in done.stdout
    assert f"unmounted {node.bind_point}\n" in done.stdout
    assert f"unmounted {node.busy_point} (lazily: it was busy)" in done.stdout
    assert f"pod volume data in {node.kubelet_root}: kept (--purge-volumes" in done.stdout
    assert node.mounts_left() == []
    assert node.emptydir_file.read_text() == "pod data\n"
    assert (node.persistent / "pv.txt").exists()
    assert node.state.is_dir() and node.folder.is_dir()  # only --purge removes them


def test_purge_removes_state_and_node_folder_but_not_the_volume_data_inside(
    service_root: ServiceRoot, node: Node
) -> None:
    done = service_root.run("uninstall", "--purge", before=node.mount_volumes(), after=node.after())
    assert done.returncode == 0, done.stderr
    assert not node.state.exists()
    assert f"removed {node.folder} (all but the pod volume data in {node.kubelet_root})" in (
        done.stdout
    )
    assert sorted(path.name for path in node.folder.iterdir()) == ["volumes"]
    assert node.emptydir_file.read_text() == "pod data\n"
    assert (node.persistent / "pv.txt").exists()


def test_purge_volumes_deletes_the_kubelet_root_never_what_was_mounted_in_it(
    service_root: ServiceRoot, node: Node
) -> None:
    done = service_root.run(
        "uninstall", "--purge", "--purge-volumes", before=node.mount_volumes(), after=node.after()
    )
    assert done.returncode == 0, done.stderr
    assert not node.folder.exists() and not node.state.exists()
    assert (node.persistent / "pv.txt").read_text() == "persistent data\n"
    assert "kept" not in done.stdout


def test_uninstall_where_nothing_is_installed_does_nothing(service_root: ServiceRoot) -> None:
    done = service_root.run("uninstall")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "nothing to remove: nodehost is not installed here\n"


def test_uninstall_refuses_to_remove_the_files_while_nodehost_runs_on_the_state_dir(
    service_root: ServiceRoot, node: Node
) -> None:
    """A held state lock: the node is not torn down, and the paths stay for the next run."""
    lock = node.state / "run" / "host.lock"
    hold = f"mkdir -p {lock.parent}; (exec 9>{lock}; flock 9; exec sleep 300) & echo $! > {node.tmp}/busy.pid; sleep 0.2\n"
    done = service_root.run("uninstall", before=hold, after=f"kill $(cat {node.tmp}/busy.pid)")
    assert done.returncode == 1
    assert "did not tear the node down" in done.stderr
    assert "run it again" in done.stderr
    assert service_root.environment.exists()


@pytest.mark.needs("strace")
def test_an_uninstall_killed_at_any_removal_is_finished_by_the_next(
    service_root: ServiceRoot, tmp_path: Path
) -> None:
    """SIGKILL at the Nth unlink/rmdir/umount2, for every N until one run goes through."""
    killed = 0
    for when in range(1, 40):
        case = tmp_path / f"case{when}"
        case.mkdir()
        node = Node(case)
        node.create()
        assert service_root.run("install", *node.flags()).returncode == 0
        inject = f"umount2,unlink,unlinkat,rmdir:signal=SIGKILL:when={when}"
        second = f"{NODEHOST} uninstall > {case}/again.out 2>&1; echo $? > {case}/again.rc"
        first = service_root.run(
            "uninstall",
            "--purge",
            before=node.mount_volumes(),
            after=node.after(then=second),
            wrapper=("strace", "-f", "-qq", "-o", "/dev/null", "-e", f"inject={inject}"),
        )
        again = (case / "again.out").read_text()
        assert (case / "again.rc").read_text().strip() == "0", (when, first.stdout, again)
        assert not service_root.unit.exists() and not service_root.environment.exists(), when
        assert node.mounts_left() == [], when
        assert node.emptydir_file.read_text() == "pod data\n", when
        assert (node.persistent / "pv.txt").exists(), when
        if first.returncode == 0:
            break
        killed += 1
    else:
        pytest.fail("uninstall was killed at every step tried")
    assert killed >= 3, killed


@pytest.mark.needs("systemctl")
def test_where_systemd_cannot_stop_the_service_the_environment_file_stays(
    service_root: ServiceRoot, node: Node
) -> None:
    """A faked /run/systemd/system and no manager: systemctl's refusals are reported, the rest
    is done, and the environment file stays for the next run."""
    done = service_root.run("uninstall", systemd=True)
    assert done.returncode == 1
    assert "nodehost.service may still run: systemctl stop nodehost.service failed" in done.stderr
    assert "run it again" in done.stderr
    assert service_root.unit.exists() and service_root.environment.exists()
    assert "kept until the rest is done" in done.stdout
    again = service_root.run("uninstall")  # systemd gone (not faked): finishes
    assert again.returncode == 0, again.stderr
    assert "removed /etc/default/nodehost" in again.stdout
    assert not service_root.unit.exists() and not service_root.environment.exists()
