"""The ``images`` component: archives imported once into containerd's ``k8s.io`` namespace,
pinned, before the kubelet starts; a missing pod infrastructure image keeps the node from
starting the kubelet, with a line naming the image and the folder."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from realruntime import oci_image_tar, wait_for

from nodehost.plugins.runtime import IMAGES_COMPONENT, nodehost_validate_config
from nodehost.plugins.runtime.images import imported_names, normalized
from nodehost.testing.noderun import NodeRun

POD_IMAGE = "registry.nodehost.invalid/origin-pod:v3.11.0"  # never resolves: no pull
IMAGE_FORMAT = "registry.nodehost.invalid/origin-${component}:${version}"
COMPONENTS = "runtime,images,kubelet"


def test_the_plan_reads_the_default_folder_and_names_the_pod_image(
    sample_config, make_context, tmp_path: Path
) -> None:
    context = make_context(
        sample_config(), selected=frozenset({"runtime", "images", "kubelet"}),
        state_dir=str(tmp_path / "state" / "images"),
    )  # fmt: skip
    plan = IMAGES_COMPONENT.plan(context)
    task = plan.run.run  # type: ignore[union-attr]
    assert task.archives == str(tmp_path / "state" / "images")
    assert task.record == str(tmp_path / "state" / "images" / "imported.json")
    assert task.socket == str(tmp_path / "state" / "runtime" / "containerd.sock")
    assert task.pod_image == "openshift/origin-pod:v3.11.0"


def test_a_standin_kubelet_needs_no_pod_image(sample_config, make_context) -> None:
    from types import SimpleNamespace

    selected = frozenset({"runtime", "images", "kubelet"})
    options = SimpleNamespace(components="runtime,images,kubelet", enable=None, standins="always")
    plan = IMAGES_COMPONENT.plan(make_context(sample_config(), selected=selected, options=options))
    assert plan.run.run.pod_image_required is False  # type: ignore[union-attr]


def test_an_external_runtime_gets_no_import(sample_config, make_context) -> None:
    config = sample_config(containerRuntime={"endpoint": "unix:///run/crio/crio.sock"})
    selected = frozenset({"runtime", "images", "kubelet"})
    plan = IMAGES_COMPONENT.plan(make_context(config, selected=selected))
    assert plan.inactive_reason == "the container runtime is external (unix:///run/crio/crio.sock)"


def test_archives_set_while_the_images_component_is_not_selected_is_a_warning(
    sample_config,
) -> None:
    config = sample_config(containerRuntime={"imageArchives": "/srv/images"})
    found = nodehost_validate_config(config=config, selected=frozenset({"runtime", "kubelet"}))
    assert [p.render() for p in found] == [
        "containerRuntime.imageArchives: has no effect in nodehost: it is used only when the "
        "images component is selected"
    ]


def test_relative_archive_folder_is_a_problem(sample_config) -> None:
    config = sample_config(containerRuntime={"imageArchives": "images"})
    found = nodehost_validate_config(config=config, selected=frozenset({"runtime", "images"}))
    assert [p.render() for p in found] == [
        'containerRuntime.imageArchives: Invalid value: "images": must be an absolute path'
    ]


def test_names_are_read_from_ctr_and_normalised_as_containerd_names_them() -> None:
    output = "unpacking docker.io/library/a:1 (sha256:0f)...done\nunpacking q.io/b:2 (sha256:1e)"
    assert imported_names(output) == ["docker.io/library/a:1", "q.io/b:2"]
    assert normalized("openshift/origin-pod:v3.11.0") == "docker.io/openshift/origin-pod:v3.11.0"
    assert normalized("busybox") == "docker.io/library/busybox:latest"


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
            f"put an archive holding it (docker save or OCI layout, *.tar) in {folder}"
        )
        assert node.component("kubelet")["pid"] in (None, 0)
        oci_image_tar(tmp_path, POD_IMAGE, "pod.tar")
        shutil.move(tmp_path / "pod.tar", folder / "pod.tar")
        node.ready(timeout=90)
        assert POD_IMAGE in images_in_containerd(short_dir / "state")
    finally:
        assert node.stop() == 0
