"""The ``images`` component: archives (plain or compressed) imported once into containerd's
``k8s.io`` namespace, pinned, before the kubelet starts, and those dropped in while it runs; a
corrupt archive is one warning; a missing pod infrastructure image keeps the node from starting
the kubelet, with a line naming the image and the folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from realruntime import oci_image_tar, wait_for

from nodehost.plugins.runtime import IMAGES_COMPONENT, nodehost_validate_config
from nodehost.plugins.runtime.images import (
    archives_in,
    decompressor_of,
    imported_names,
    normalized,
    pull_auth,
)
from nodehost.plugins.runtime.settings import read_settings
from nodehost.testing.noderun import NodeRun

POD_IMAGE = "registry.nodehost.invalid/origin-pod:v3.11.0"  # never resolves: no pull
IMAGE_FORMAT = "registry.nodehost.invalid/origin-${component}:${version}"
COMPONENTS = "runtime,images,kubelet"


def test_the_plan_reads_the_default_folder_and_names_the_pod_image(
    make_config, make_context, tmp_path: Path
) -> None:
    context = make_context(
        make_config(), selected=frozenset({"runtime", "images", "kubelet"}),
        state_dir=str(tmp_path / "state" / "images"),
    )  # fmt: skip
    plan = IMAGES_COMPONENT.plan(context)
    task = plan.run.run  # type: ignore[union-attr]
    assert task.archives == str(tmp_path / "state" / "images")
    assert task.record == str(tmp_path / "state" / "images" / "imported.json")
    assert task.socket == str(tmp_path / "state" / "runtime" / "containerd.sock")
    assert task.pod_image == "openshift/origin-pod:v3.11.0"


def test_a_standin_kubelet_needs_no_pod_image(make_config, make_context) -> None:
    from types import SimpleNamespace

    selected = frozenset({"runtime", "images", "kubelet"})
    options = SimpleNamespace(components="runtime,images,kubelet", enable=None, standins="always")
    plan = IMAGES_COMPONENT.plan(make_context(make_config(), selected=selected, options=options))
    assert plan.run.run.pod_image_required is False  # type: ignore[union-attr]


def test_an_external_runtime_gets_no_import(make_config, make_context) -> None:
    config = make_config(containerRuntime={"endpoint": "unix:///run/crio/crio.sock"})
    selected = frozenset({"runtime", "images", "kubelet"})
    plan = IMAGES_COMPONENT.plan(make_context(config, selected=selected))
    assert plan.inactive_reason == "the container runtime is external (unix:///run/crio/crio.sock)"


def test_archives_set_while_the_images_component_is_not_selected_is_a_warning(
    make_config,
) -> None:
    config = make_config(containerRuntime={"imageArchives": "/srv/images"})
    found = nodehost_validate_config(config=config, selected=frozenset({"runtime", "kubelet"}))
    assert [p.render() for p in found] == [
        "containerRuntime.imageArchives: has no effect in nodehost: it is used only when the "
        "images component is selected"
    ]


def test_relative_archive_folder_is_a_problem(make_config) -> None:
    config = make_config(containerRuntime={"imageArchives": "images"})
    found = nodehost_validate_config(config=config, selected=frozenset({"runtime", "images"}))
    assert [p.render() for p in found] == [
        'containerRuntime.imageArchives: Invalid value: "images": must be an absolute path'
    ]


def test_names_are_read_from_ctr_and_normalised_as_containerd_names_them() -> None:
    output = "unpacking docker.io/library/a:1 (sha256:0f)...done\nunpacking q.io/b:2 (sha256:1e)"
    assert imported_names(output) == ["docker.io/library/a:1", "q.io/b:2"]
    assert normalized("openshift/origin-pod:v3.11.0") == "docker.io/openshift/origin-pod:v3.11.0"
    assert normalized("busybox") == "docker.io/library/busybox:latest"


def test_compressed_archives_are_found_with_their_decompressor(tmp_path: Path) -> None:
    for name in ("a.tar", "b.tar.gz", "c.tgz", "d.tar.zst", "e.zip", "f.tar.part"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "g.tar").mkdir()
    found = [os.path.basename(path) for path in archives_in(str(tmp_path))]
    assert found == ["a.tar", "b.tar.gz", "c.tgz", "d.tar.zst"]
    assert [decompressor_of(name) for name in found] == [
        None, ("gzip", "-dc"), ("gzip", "-dc"), ("zstd", "-dc"),
    ]  # fmt: skip
    assert archives_in(str(tmp_path), {"c.tgz", "e.zip", "gone.tar"}) == [str(tmp_path / "c.tgz")]


def test_the_pull_carries_the_credentials_of_an_unmirrored_registry_only(make_config) -> None:
    basic = {"auth": {"username": "puller", "password": "s3cret"}}
    config = make_config(
        containerRuntime={
            "registries": {
                "mirrors": {"mirrored.example": {"endpoint": ["https://m.example"]}},
                "configs": {"r.example:5000": basic, "mirrored.example": basic, "docker.io": basic},
            }
        }
    )
    registries = read_settings(config)[0].registries
    auth = pull_auth(registries, "r.example:5000/origin-pod:v3.11.0")
    assert auth is not None
    assert (auth.server_address, auth.username, auth.password) == (
        "https://r.example:5000", "puller", "s3cret",
    )  # fmt: skip
    assert "s3cret" not in repr(auth)
    assert pull_auth(registries, "openshift/origin-pod:v3.11.0").server_address == (  # type: ignore[union-attr]
        "https://registry-1.docker.io"
    )
    assert pull_auth(registries, "mirrored.example/origin-pod:v3.11.0") is None
    assert pull_auth(registries, "other.example/origin-pod:v3.11.0") is None


# --- with a real containerd ------------------------------------------------------------------


def start(node_folder, short_dir: Path, plugin_env) -> NodeRun:
    config = node_folder()
    config.write_text(
        config.read_text().replace("openshift/origin-${component}:${version}", IMAGE_FORMAT)
    )
    # The stand-in given as the kubelet's program: a stand-in chosen by --standins runs no pods
    # and needs no pod image, so the images component would not ask for one.
    standin = Path(sys.executable).parent / "nodehost-standin-kubelet"
    return NodeRun.start(
        config,
        components=COMPONENTS,
        state_dir=short_dir / "state",
        env=plugin_env,
        standins="never",
        args=[f"--binary=kubelet={standin}"],
    )


def images_in_containerd(state: Path) -> dict[str, str]:
    """``ctr -n k8s.io images ls``: name -> labels."""
    import subprocess

    socket = state / "runtime" / "containerd.sock"
    listing = subprocess.run(
        ["ctr", "--address", str(socket), "--namespace", "k8s.io", "images", "ls"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    rows = [line.split() for line in listing.stdout.splitlines()[1:] if line.strip()]
    return {row[0]: row[-1] for row in rows}


needs_real = pytest.mark.needs("root", "containerd", "busybox", "nodehost-script")


def compressed(path: Path, program: str) -> Path:
    """``path`` compressed with ``program`` (gzip or zstd) beside it; the original removed."""
    subprocess.run([program, "-q", "--rm" if program == "zstd" else "-f", str(path)], check=True)
    return path.with_name(path.name + (".zst" if program == "zstd" else ".gz"))


def events(node: NodeRun, name: str) -> list[dict]:
    return [e for e in node.logs() if e["event"] == name]


@needs_real
@pytest.mark.usefixtures("outside_guard")
def test_archives_are_imported_once_pinned_before_the_kubelet_starts(
    node_folder, short_dir: Path, plugin_env
) -> None:
    folder = short_dir / "state" / "images"
    folder.mkdir(parents=True)
    oci_image_tar(folder, POD_IMAGE, "pod.tar")
    oci_image_tar(folder, "registry.nodehost.invalid/tools:1", "tools.tar")
    node = start(node_folder, short_dir, plugin_env)
    try:
        node.ready()
        images = images_in_containerd(short_dir / "state")
        for name in (POD_IMAGE, "registry.nodehost.invalid/tools:1"):
            assert "io.cri-containerd.pinned=pinned" in images[name]
        record = json.loads((folder / "imported.json").read_text())
        assert sorted(entry["file"] for entry in record.values()) == ["pod.tar", "tools.tar"]
        order = [
            (e.get("component"), e["event"])
            for e in node.logs()
            if e["event"] in ("component ready", "component started")
        ]
        assert order.index(("images", "component ready")) < order.index(
            ("kubelet", "component started")
        )
        assert len([e for e in node.logs() if e["event"] == "image archive imported"]) == 2
    finally:
        assert node.stop() == 0
    again = start(node_folder, short_dir, plugin_env)
    try:
        again.ready()
        assert not [e for e in again.logs() if e["event"] == "image archive imported"]
    finally:
        assert again.stop() == 0


@needs_real
@pytest.mark.usefixtures("outside_guard")
def test_a_missing_pod_image_holds_the_kubelet_until_its_archive_is_dropped_in(
    node_folder, short_dir: Path, plugin_env, tmp_path: Path
) -> None:
    folder = short_dir / "state" / "images"
    node = start(node_folder, short_dir, plugin_env)
    try:

        def problem() -> str | None:
            entry = node.component("images")
            return entry["reason"] if "cannot be pulled" in (entry.get("reason") or "") else None

        reason = wait_for(problem, "the images component to say what is missing", 60)
        assert reason == (
            f"pod infrastructure image {POD_IMAGE} is not in containerd and cannot be pulled: "
            f"put an archive holding it (docker save or OCI layout; *.tar, *.tar.gz, *.tgz, "
            f"*.tar.zst) in {folder}"
        )
        assert node.component("kubelet")["pid"] in (None, 0)
        oci_image_tar(tmp_path, POD_IMAGE, "pod.tar")
        shutil.move(tmp_path / "pod.tar", folder / "pod.tar")
        node.ready(timeout=90)
        assert POD_IMAGE in images_in_containerd(short_dir / "state")
    finally:
        assert node.stop() == 0


@needs_real
@pytest.mark.needs("zstd")
@pytest.mark.usefixtures("outside_guard")
def test_archives_dropped_in_while_running_are_imported_and_a_corrupt_one_is_one_warning(
    node_folder, short_dir: Path, plugin_env, tmp_path: Path
) -> None:
    folder = short_dir / "state" / "images"
    folder.mkdir(parents=True)
    compressed(oci_image_tar(folder, POD_IMAGE, "pod.tar"), "gzip")
    (folder / "broken.tar").write_bytes(b"not an image archive\n")
    node = start(node_folder, short_dir, plugin_env)
    try:
        node.ready()
        failures = events(node, "image archive does not import")
        assert len(failures) == 1, failures
        [broken] = failures
        assert broken["archive"] == str(folder / "broken.tar")
        assert node.component("images")["details"]["failed_archives"] == [broken["archive"]]
        assert POD_IMAGE in images_in_containerd(short_dir / "state")
        tools = compressed(oci_image_tar(tmp_path, "registry.nodehost.invalid/tools:1"), "zstd")
        os.rename(tools, folder / "tools.tar.zst")  # same file system: a move, complete at once

        def imported(name: str) -> dict | None:
            found = [e for e in events(node, "image archive imported") if name in e["archive"]]
            return found[0] if found else None

        entry = wait_for(lambda: imported("tools.tar.zst"), "the dropped archive's import", 60)
        assert entry["images"] == ["registry.nodehost.invalid/tools:1"]
        assert (
            "io.cri-containerd.pinned=pinned"
            in images_in_containerd(short_dir / "state")["registry.nodehost.invalid/tools:1"]
        )
        (folder / "broken.tar").write_bytes(b"not an image archive\n")  # same content again
        oci_image_tar(folder, "registry.nodehost.invalid/more:1", "more.tar")
        wait_for(lambda: imported("more.tar"), "the second dropped archive's import", 60)
        assert len(events(node, "image archive does not import")) == 1  # not retried
        (folder / "broken.tar").write_bytes(b"changed, still not an archive\n")
        wait_for(
            lambda: len(events(node, "image archive does not import")) == 2,
            "the changed archive to be tried again",
            60,
        )
    finally:
        assert node.stop() == 0
