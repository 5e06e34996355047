"""Random documents at read + build + validate: success or a clean ConfigError, nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodehost.config.load import load_node_config
from nodehost.config.validate import validate_node_config
from nodehost.errors import ConfigError
from nodehost.pluginhost.records import Problem, ValidationScope

SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
KNOWN_KEYS = [
    "nodeName", "nodeIP", "servingInfo", "bindAddress", "certFile", "namedCertificates", "names",
    "dnsNameservers", "networkConfig", "mtu", "kubeletArguments", "bootstrap-kubeconfig",
    "cert-dir", "podManifestConfig", "fileCheckIntervalSeconds", "authConfig",
    "authenticationCacheTTL", "volumeConfig", "localQuota", "perFSGroup", "iptablesSyncPeriod",
    "masterClientConnectionOverrides", "qps", "burst", "enableUnidling", "apiVersion", "kind",
]  # fmt: skip

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
    | st.sampled_from(["0", "5", "5m", "-1s", "0.0.0.0", "::", "1.2.3.4:53", "-1000Mi", "tcp6"])
)
_keys = st.sampled_from(KNOWN_KEYS) | st.text(max_size=8)
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=30,
)
_fragments = st.sampled_from(
    ["a:", "nodeName:", " ", "  ", "\n", "- ", "[", "]", "{", "}", "&x ", "*x", "<<: ", "!!str ",
     "!!binary ", "'", '"', "#", "---\n", "...", "|", ">", "? ", ",", "1", "null", "\t", "\\",
     "servingInfo:\n  ", "%YAML 1.1\n", "!foo ", "\u00e9", "\ufeff"]
)  # fmt: skip


def exercise(path: Path) -> None:
    """The contract: load and validate succeed, or loading raises ConfigError."""
    try:
        config, problems = load_node_config(str(path), known_sections=["myNetwork"])
    except ConfigError as error:
        assert str(error).startswith(f'could not load config file "{path}" due to an error: ')
        return
    assert all(isinstance(problem, Problem) for problem in problems)
    for scope in ValidationScope:
        for problem in validate_node_config(config, scope):
            assert isinstance(problem.render(), str)


def dump(document: Any) -> str:
    return yaml.safe_dump(document, allow_unicode=True)


@SETTINGS
@given(document=st.dictionaries(_keys, _values, max_size=8))
def test_random_mappings(tmp_path: Path, document: dict) -> None:
    path = tmp_path / "random.yaml"
    path.write_text(dump({"apiVersion": "v1", "kind": "NodeConfig", **document}), encoding="utf-8")
    exercise(path)


@SETTINGS
@given(document=_values)
def test_random_documents(tmp_path: Path, document: Any) -> None:
    path = tmp_path / "random.yaml"
    path.write_text(dump(document), encoding="utf-8")
    exercise(path)


@SETTINGS
@given(pieces=st.lists(_fragments, max_size=40))
def test_random_yaml_text(tmp_path: Path, pieces: list[str]) -> None:
    path = tmp_path / "random.yaml"
    path.write_text("".join(pieces), encoding="utf-8")
    exercise(path)


@SETTINGS
@given(data=st.binary(max_size=200))
def test_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "random.yaml"
    path.write_bytes(data)
    exercise(path)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += _paths(item, (*prefix, index))
    return paths


@SETTINGS
@given(data=st.data())
def test_random_mutations_of_the_sample(
    tmp_path: Path, sample_path: Path, data: st.DataObject
) -> None:
    document = yaml.safe_load(sample_path.read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        target = data.draw(st.sampled_from([p for p in _paths(document) if p]))
        parent = document
        for step in target[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["replace", "delete", "add-unknown"]))
        if action == "replace":
            parent[target[-1]] = data.draw(_values)
        elif action == "delete":
            del parent[target[-1]]
        elif isinstance(parent, dict):
            parent[data.draw(_keys)] = copy.deepcopy(data.draw(_values))
        if not isinstance(document, dict):
            break
    path = tmp_path / "node-config.yaml"
    path.write_text(dump(document), encoding="utf-8")
    exercise(path)
