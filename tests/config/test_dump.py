"""YAML output: Origin's keys and order, and a faithful round trip."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodehost.config.dump import dump_node_config
from nodehost.config.load import load_node_config, node_config_from_mapping
from nodehost.config.schema import NodeConfig, yaml_keys


def reload(tmp_path: Path, config: NodeConfig, known: tuple[str, ...] = ()) -> NodeConfig:
    path = tmp_path / "dumped.yaml"
    path.write_text(dump_node_config(config), encoding="utf-8")
    loaded, problems = load_node_config(str(path), known_sections=known)
    assert problems == []
    return loaded


def test_type_meta_first_then_origin_order() -> None:
    text = dump_node_config(NodeConfig())
    top_level = [line.split(":")[0] for line in text.splitlines() if line[:1].isalpha()]
    omitted = {"networkPluginName", "kubeletArguments", "proxyArguments"}
    assert top_level == [
        "apiVersion",
        "kind",
        *(k for k in yaml_keys(NodeConfig) if k not in omitted),
    ]


def test_defaults_are_written_out() -> None:
    text = dump_node_config(NodeConfig())
    assert "  mtu: 1450\n" in text
    assert "iptablesSyncPeriod: 30s\n" in text
    assert "podManifestConfig: null\n" in text
    assert "minTLSVersion" not in text  # omitempty, as Origin


def test_sample_round_trips_with_absolute_paths(tmp_path: Path, sample_path: Path) -> None:
    config, _ = load_node_config(str(sample_path))
    assert f"clientCA: {sample_path.parent}/ca.crt" in dump_node_config(config)
    assert reload(tmp_path, config) == config


def test_plugin_sections_are_kept(tmp_path: Path) -> None:
    config, _ = node_config_from_mapping(
        {"myNetwork": {"vni": 4, "peers": ["a", "b"]}}, known_sections=["myNetwork"]
    )
    assert reload(tmp_path, config, ("myNetwork",)) == config


_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12
)
_names = st.text("abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=10)
_random_raw = st.fixed_dictionaries(
    {},
    optional={
        "nodeName": _text,
        "nodeIP": _text,
        "dnsNameservers": st.lists(_text, max_size=3),
        "networkPluginName": _text,
        "masterKubeConfig": _text,
        "allowDisabledDocker": st.booleans(),
        "enableUnidling": st.booleans(),
        "servingInfo": st.fixed_dictionaries(
            {},
            optional={
                "bindAddress": _text,
                "certFile": _text,
                "cipherSuites": st.lists(_text, max_size=2),
                "namedCertificates": st.lists(
                    st.fixed_dictionaries(
                        {"names": st.lists(_text, max_size=2), "certFile": _text}
                    ),
                    max_size=2,
                ),
            },
        ),
        "masterClientConnectionOverrides": st.fixed_dictionaries(
            {"qps": st.floats(-1e6, 1e6), "burst": st.integers(-(2**63), 2**63 - 1)}
        ),
        "networkConfig": st.fixed_dictionaries({"mtu": st.integers(0, 2**32 - 1)}),
        "podManifestConfig": st.none()
        | st.fixed_dictionaries({"path": _text, "fileCheckIntervalSeconds": st.integers(-5, 5)}),
        "kubeletArguments": st.dictionaries(_names, st.lists(_text, max_size=2), max_size=3),
        "proxyArguments": st.dictionaries(_names, st.lists(_text, max_size=2), max_size=2),
        "volumeConfig": st.fixed_dictionaries(
            {
                "localQuota": st.fixed_dictionaries(
                    {"perFSGroup": st.none() | st.sampled_from(["512Mi", "-1G", "1.5e3", "0"])}
                )
            }
        ),
        "extraSection": st.dictionaries(_names, _text | st.integers(), max_size=2),
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=_random_raw)
def test_any_valid_config_round_trips(tmp_path: Path, raw: dict) -> None:
    config, problems = node_config_from_mapping(
        raw, base_dir="/base", known_sections=["extraSection"]
    )
    assert problems == []
    assert reload(tmp_path, config, ("extraSection",)) == config
