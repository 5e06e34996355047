"""The runtime's plan: containerd's configuration, the kubelet's arguments, external runtimes."""

from __future__ import annotations

import os
import tomllib
from types import SimpleNamespace

import pytest

from nodehost.component import CriProbe, ProcessSpec, TaskSpec
from nodehost.errors import RuntimeFailure
from nodehost.plugins.runtime import RUNTIME, nodehost_kubelet_arguments, nodehost_validate_config
from nodehost.plugins.runtime.containerd import NOT_CRI_HINT, render_config, shim_programs
from nodehost.plugins.runtime.settings import Paths

BRIDGE = {"podCIDR": "10.244.1.0/24", "cniConfDir": "/srv/cni/net.d", "cniBinDirs": ["/srv/cni"]}
SELECTED = frozenset({"runtime", "kubelet"})


def config_toml(plan) -> dict:
    (spec,) = [spec for spec in plan.files if spec.path.endswith(".toml")]
    return tomllib.loads(spec.content.decode())


def test_containerd_finds_its_shims_through_workload_launchers(
    sample_config, make_context, tmp_path
) -> None:
    programs = tmp_path / "programs"
    programs.mkdir()
    for name in ("containerd-shim-runc-v2", "containerd-shim-other-v2", "not-a-shim"):
        (programs / name).write_text("#!/bin/sh\n")
        (programs / name).chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", str(programs))
        plan = RUNTIME.plan(make_context(sample_config()))
    launcher_dir = tmp_path / "state" / "runtime" / "bin"
    assert plan.run.env["PATH"] == f"{launcher_dir}:{programs}"
    launchers = {spec.path: spec for spec in plan.files if spec.path.startswith(str(launcher_dir))}
    assert sorted(launchers) == [
        f"{launcher_dir}/containerd-shim-other-v2",
        f"{launcher_dir}/containerd-shim-runc-v2",
    ]
    script = launchers[f"{launcher_dir}/containerd-shim-runc-v2"]
    assert script.mode == 0o755
    assert script.content.decode().endswith(f'exec {programs}/containerd-shim-runc-v2 "$@"\n')


def test_a_folder_path_names_twice_is_listed_once_for_shims(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/bin`` and ``/usr/bin`` on a merged ``/usr``: one folder, one listing, same answer."""
    programs, other = tmp_path / "programs", tmp_path / "other"
    for folder in (programs, other):
        folder.mkdir()
    for path in (programs / "containerd-shim-runc-v2", other / "containerd-shim-extra-v1"):
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    (tmp_path / "link").symlink_to(programs)
    listed: list[str] = []
    listdir = os.listdir

    def counted(folder: str) -> list[str]:
        listed.append(folder)
        return listdir(folder)

    monkeypatch.setattr(os, "listdir", counted)
    search = [programs, tmp_path / "link", programs, tmp_path / "missing", other, tmp_path / "link"]
    found = shim_programs(os.pathsep.join(map(str, search)))
    assert found == {
        "containerd-shim-runc-v2": f"{programs}/containerd-shim-runc-v2",
        "containerd-shim-extra-v1": f"{other}/containerd-shim-extra-v1",
    }
    assert listed == [str(programs), str(other)]


def test_containerd_keeps_root_state_sockets_and_opt_under_the_component_folder(
    sample_config, make_context, tmp_path
) -> None:
    plan = RUNTIME.plan(make_context(sample_config()))
    folder = str(tmp_path / "state" / "runtime")
    document = config_toml(plan)
    assert document["version"] == 2
    assert document["root"] == f"{folder}/root"
    assert document["state"] == f"{folder}/state"
    assert document["grpc"]["address"] == f"{folder}/containerd.sock"
    assert document["ttrpc"]["address"] == f"{folder}/containerd.sock.ttrpc"
    assert document["debug"]["address"] == document["metrics"]["address"] == ""
    assert document["plugins"]["io.containerd.internal.v1.opt"]["path"] == f"{folder}/opt"
    runc = document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]
    assert runc["options"]["Root"] == f"{folder}/state/runc"


def test_the_cri_plugin_uses_the_network_providers_cni_directories(
    sample_config, make_context
) -> None:
    config = sample_config(networkConfig={"networkPluginName": "bridge"}, bridgeNetwork=BRIDGE)
    cni = config_toml(RUNTIME.plan(make_context(config)))["plugins"]["io.containerd.grpc.v1.cri"]
    assert cni["cni"] == {"conf_dir": "/srv/cni/net.d", "bin_dir": "/srv/cni"}


@pytest.mark.parametrize(("driver", "systemd_cgroup"), [("systemd", True), ("cgroupfs", False)])
def test_runc_uses_the_kubelets_cgroup_driver(
    sample_config, make_context, driver, systemd_cgroup
) -> None:
    config = sample_config(kubeletArguments={"cgroup-driver": [driver]})
    document = config_toml(RUNTIME.plan(make_context(config)))
    runc = document["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]
    assert runc["options"]["SystemdCgroup"] is systemd_cgroup


def test_standard_paths_are_containerds_own(sample_config, make_context) -> None:
    document = config_toml(
        RUNTIME.plan(make_context(sample_config(containerRuntime={"paths": "standard"})))
    )
    assert (document["root"], document["state"]) == ("/var/lib/containerd", "/run/containerd")
    assert document["grpc"]["address"] == "/run/containerd/containerd.sock"
    assert document["plugins"]["io.containerd.internal.v1.opt"]["path"] == "/opt/containerd"


def test_the_pod_sandbox_image_is_origins_pod_infra_image(sample_config, make_context) -> None:
    config = sample_config(imageConfig={"format": "mirror.example/origin-${component}:${version}"})
    document = config_toml(RUNTIME.plan(make_context(config)))
    cri = document["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "mirror.example/origin-pod:v3.11.0"


def test_paths_that_need_quoting_stay_valid_toml() -> None:
    odd = '/tmp/a "quoted" \\ dir'
    paths = Paths(odd, odd, odd + "/c.sock", odd)
    assert tomllib.loads(render_config(paths, None, "cgroupfs", "pause:1").decode())["root"] == odd


def test_containerd_is_ready_when_it_answers_cri_with_runtime_ready(
    sample_config, make_context, tmp_path
) -> None:
    run = RUNTIME.plan(make_context(sample_config())).run
    assert isinstance(run, ProcessSpec)
    assert run.argv[:2] == ("containerd", "--config")
    socket = tmp_path / "state" / "runtime" / "containerd.sock"
    assert run.readiness == CriProbe(
        endpoint=f"unix://{socket}", interval=0.5, timeout=2.0, not_cri_hint=NOT_CRI_HINT
    )
    assert 'remove "io.containerd.grpc.v1.cri" from disabled_plugins' in NOT_CRI_HINT


def test_the_kubelet_is_pointed_at_the_managed_runtimes_socket(
    sample_config, make_context, tmp_path
) -> None:
    config = sample_config()
    endpoint = f"unix://{tmp_path}/state/runtime/containerd.sock"
    contributed = nodehost_kubelet_arguments(
        config=config, selected=SELECTED, state_dir=str(tmp_path / "state")
    )
    assert contributed["container-runtime-endpoint"] == [endpoint]
    assert contributed["image-service-endpoint"] == [endpoint]
    assert contributed["cgroup-driver"][0] in ("systemd", "cgroupfs")


def test_the_kubelet_keeps_an_endpoint_that_kubelet_arguments_name(sample_config) -> None:
    config = sample_config(kubeletArguments={"container-runtime-endpoint": ["unix:///run/x.sock"]})
    assert nodehost_kubelet_arguments(config=config, selected=SELECTED, state_dir="/x") == {}


def test_the_kubelet_gets_nothing_when_the_runtime_is_not_selected(sample_config) -> None:
    assert (
        nodehost_kubelet_arguments(
            config=sample_config(), selected=frozenset({"kubelet"}), state_dir="/x"
        )
        == {}
    )


@pytest.mark.parametrize(
    ("changes", "source"),
    [
        ({"containerRuntime": {"endpoint": "unix:///run/crio/crio.sock"}}, "containerRuntime"),
        (
            {"kubeletArguments": {"container-runtime-endpoint": ["unix:///run/crio/crio.sock"]}},
            "kube",
        ),
        ({"dockerConfig": {"dockerShimSocket": "unix:///run/crio/crio.sock"}}, "dockerConfig"),
    ],
)
def test_an_external_endpoint_replaces_containerd_with_a_wait_for_its_socket(
    sample_config, make_context, changes, source
) -> None:
    plan = RUNTIME.plan(make_context(sample_config(**changes)))
    assert isinstance(plan.run, TaskSpec)
    assert plan.run.description.endswith("unix:///run/crio/crio.sock")
    assert plan.files == ()
    assert source in plan.notes[0]


def test_a_section_endpoint_is_passed_to_the_kubelet(sample_config) -> None:
    config = sample_config(containerRuntime={"endpoint": "unix:///run/crio/crio.sock"})
    contributed = nodehost_kubelet_arguments(config=config, selected=SELECTED, state_dir="/x")
    assert contributed["container-runtime-endpoint"] == ["unix:///run/crio/crio.sock"]


def test_in_the_default_selection_the_runtime_runs_only_for_a_component_after_it(
    sample_config, make_context
) -> None:
    options = SimpleNamespace(components=None, enable=None)
    context = make_context(
        sample_config(), selected=frozenset({"runtime", "proxy"}), options=options
    )
    assert "no selected component runs after it" in RUNTIME.plan(context).inactive_reason
    used = make_context(
        sample_config(), selected=frozenset({"runtime", "kubelet"}), options=options
    )
    assert isinstance(RUNTIME.plan(used).run, ProcessSpec)


def test_named_explicitly_the_runtime_runs_without_the_kubelet(sample_config, make_context) -> None:
    options = SimpleNamespace(components="runtime", enable=None)
    context = make_context(sample_config(), selected=frozenset({"runtime"}), options=options)
    assert isinstance(RUNTIME.plan(context).run, ProcessSpec)


def test_a_socket_path_too_long_for_unix_sockets_is_an_error_naming_the_component(
    sample_config, make_context, tmp_path
) -> None:
    context = make_context(sample_config(), state_dir=str(tmp_path / ("x" * 100) / "runtime"))
    with pytest.raises(RuntimeFailure, match=r"^component runtime: the socket path .* bytes"):
        RUNTIME.plan(context)


def test_a_socket_in_an_unwritable_place_is_an_error_naming_the_component(
    sample_config, make_context, tmp_path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    config = sample_config(containerRuntime={"socket": f"{blocker}/run/c.sock"})
    with pytest.raises(RuntimeFailure, match=f"cannot create the socket .*: {blocker} is not a"):
        RUNTIME.plan(make_context(config))


def test_every_bad_setting_is_reported_at_its_field(sample_config) -> None:
    config = sample_config(
        containerRuntime={
            "endpoint": "tcp://1.2.3.4:5",
            "paths": "elsewhere",
            "root": "relative",
            "cgroupDriver": "cgroupv3",
            "waitTimeout": "soon",
            "sokcet": "/x",
        }
    )
    problems = nodehost_validate_config(config=config, selected=SELECTED)
    assert sorted(problem.path for problem in problems) == [
        "containerRuntime.cgroupDriver",
        "containerRuntime.endpoint",
        "containerRuntime.paths",
        "containerRuntime.root",
        "containerRuntime.sokcet",
        "containerRuntime.waitTimeout",
    ]
    assert 'did you mean "socket"?' in next(p.detail for p in problems if "sokcet" in p.path)


@pytest.mark.parametrize(
    ("verbosity", "level"), [(0, "warn"), (1, "warn"), (2, "info"), (4, "debug")]
)
def test_containerd_logs_at_the_level_nodehosts_verbosity_asks_for(
    verbosity: int, level: str
) -> None:
    from nodehost.plugins.runtime.containerd import containerd_argv

    argv = containerd_argv("/x/containerd.toml", verbosity)
    assert argv[argv.index("--log-level") + 1] == level
