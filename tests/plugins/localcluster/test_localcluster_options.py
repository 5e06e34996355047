"""What ``--local-cluster DIR`` implies for the other start options, and what it refuses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from nodehost.errors import UsageError
from nodehost.options import StartOptions
from nodehost.plugins.localcluster.options import implied_options

KNOWN = frozenset({"kubelet", "sdn", "proxy", "dns", "bootstrap", "runtime", "localcluster"})


FIELDS = {item.name for item in dataclasses.fields(StartOptions)}


def implied(directory: Path, runtime_possible: bool = True, **flags: object) -> dict:
    """What ``--local-cluster DIR`` implies with ``flags`` (start's or a plugin's options)."""
    values = {"local_cluster": str(directory)}
    values.update({key: value for key, value in flags.items() if key not in FIELDS})
    given = {key: value for key, value in flags.items() if key in FIELDS}
    options = StartOptions(plugin_values=values, **given)  # type: ignore[arg-type]
    return implied_options(options, KNOWN, runtime_possible)


def test_the_node_bootstraps_against_the_cluster_with_its_folders_in_dir(tmp_path: Path) -> None:
    changes = implied(tmp_path / "lc")
    assert changes["local_cluster"] == str(tmp_path / "lc")
    assert changes["config_dir"] == str(tmp_path / "lc" / "node")
    assert changes["state_dir"] == str(tmp_path / "lc" / "state")
    assert changes["kubeconfig"] == str(tmp_path / "lc" / "bootstrap.kubeconfig")
    assert changes["bootstrap_config_name"] == "node-config"


def test_a_relative_dir_is_made_absolute(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert implied(Path("lc"))["config_dir"] == str(tmp_path / "lc" / "node")


def test_stand_ins_only_where_the_real_programs_are_missing_unless_told(tmp_path: Path) -> None:
    assert implied(tmp_path / "a")["standins"] == "missing"
    assert "standins" not in implied(tmp_path / "b", standins="never")


def test_a_given_state_dir_is_kept(tmp_path: Path) -> None:
    assert "state_dir" not in implied(tmp_path / "lc", state_dir=str(tmp_path / "s"))


def test_the_runtime_is_left_out_where_containerd_cannot_run(tmp_path: Path) -> None:
    assert implied(tmp_path / "a", runtime_possible=False)["disable"] == "runtime"
    assert (
        implied(tmp_path / "b", runtime_possible=False, disable="dns")["disable"] == "dns,runtime"
    )
    assert "disable" not in implied(tmp_path / "c", runtime_possible=True)


def test_an_explicit_selection_is_left_as_given_but_for_the_cluster(tmp_path: Path) -> None:
    changes = implied(tmp_path / "a", runtime_possible=False, components="dns")
    assert changes["components"] == "dns,localcluster"
    assert "disable" not in changes
    assert implied(tmp_path / "b", enable="dns,localcluster").get("enable") is None


def test_no_unknown_component_is_disabled(tmp_path: Path) -> None:
    options = StartOptions(plugin_values={"local_cluster": str(tmp_path / "lc")})
    changes = implied_options(options, KNOWN - {"runtime"}, runtime_possible=False)
    assert "disable" not in changes


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        ({"config": "node-config.yaml"}, "--config"),
        ({"kubeconfig": "k"}, "--kubeconfig"),
        ({"bootstrap_config_name": "x"}, "--bootstrap-config-name"),
        ({"write_config": "out"}, "--write-config"),
        ({"write_flags": True}, "--write-flags"),
        ({"config_dir": "elsewhere"}, "--config-dir"),
        ({"master_cert_dir": "ca"}, "--master-cert-dir"),
        ({"disable": "dns,localcluster"}, "--disable"),
    ],
)
def test_a_flag_that_chooses_what_the_cluster_chooses_is_a_usage_error(
    tmp_path: Path, flags: dict, flag: str
) -> None:
    with pytest.raises(UsageError) as raised:
        implied(tmp_path / "lc", **flags)
    assert raised.value.param == flag
    assert raised.value.render().startswith(f"error: {flag} ")


def test_a_folder_that_holds_something_else_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    with pytest.raises(UsageError, match="is not empty and holds no local cluster"):
        implied(tmp_path)
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is not a folder"):
        implied(tmp_path / "file")


def test_an_empty_folder_or_an_earlier_cluster_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    implied(tmp_path / "empty")
    (tmp_path / "earlier").mkdir()
    (tmp_path / "earlier" / "cluster.json").write_text("{}")
    (tmp_path / "earlier" / "node").mkdir()
    implied(tmp_path / "earlier")


def test_the_options_are_start_options_fields(tmp_path: Path) -> None:
    """Each key is a StartOptions field or the plugin's own option (``--local-cluster``)."""
    fields = FIELDS | {"local_cluster", "bootstrap_config_name"}
    assert set(implied(tmp_path / "lc", runtime_possible=False, components="dns")) <= fields


def test_without_the_bootstrap_component_the_cluster_is_refused(tmp_path: Path) -> None:
    """The node joins the cluster through bootstrap: without it nothing would (exit 2)."""
    options = StartOptions(plugin_values={"local_cluster": str(tmp_path / "lc")})
    with pytest.raises(UsageError, match="needs the bootstrap component"):
        implied_options(options, KNOWN - {"bootstrap"}, runtime_possible=True)
    assert not (tmp_path / "lc").exists()
