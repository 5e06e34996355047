"""The node folder's YAML writer: the same bytes as PyYAML (dump_yaml) or PyYAML itself."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nodehost.config.dump import dump_yaml
from nodehost.pki import yamlout
from nodehost.pki.yamlout import dump_block_yaml

#: Strings near every rule: YAML 1.1 booleans, numbers, nulls, dates, indicators, quotes.
TRICKY = [
    "", " ", "a b", " a", "a ", "yes", "No", "ON", "off", "y", "n", "true", "False", "null",
    "Null", "~", "<<", "=", "-", "- a", "-a", "?", "? a", ":", "a:", "a:b", "a: b", "a #b",
    "a#b", "#a", "'", "a'b", '"', "1", "01", "0o7", "08", "0x1F", "0b101", "1_000", "1:20",
    "190:20:30", "1.5", "1.", ".5", "1e5", "1.0e+5", "0.0.0.0", "0.0.0.0:10250", "10.0.0.1",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-1-1T1:00:00", "2001-1x", "1234-5",
    ".inf", "-.inf", ".nan", "---", "...", "--- a", "a,b", "[a]", "{a}", "${component}",
    "unix:///var/run/x.sock", "openshift/origin-${component}:${version}", "@a", "%a", "`a",
    "a@b", "!a", "&a", "*a", "|", ">", "a|b", "https://h:8443", "system:node:n1/h-e:8443",
    "5m", "30s", "20.0", "1e-05", "inf", "nan", "NaN", "x" * 120,
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(TRICKY),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.text(max_size=4),
)
keys = st.one_of(
    st.sampled_from(TRICKY), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=8)
)
documents = st.dictionaries(
    keys,
    st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)
        ),
        max_leaves=12,
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(documents, st.booleans())
def test_same_bytes_as_pyyaml(document: dict[str, Any], sort_keys: bool) -> None:
    assert dump_block_yaml(document, sort_keys=sort_keys) == dump_yaml(
        document, sort_keys=sort_keys
    )


@pytest.mark.parametrize("text", TRICKY)
def test_each_tricky_string_as_value_and_key(text: str) -> None:
    for document in ({"k": text}, {"k": [text]}, {text or "k": 1}, {"k": [{"a": text}]}):
        assert dump_block_yaml(document) == dump_yaml(document), document


def test_shapes_of_the_node_folder_files_are_written_without_pyyaml(monkeypatch) -> None:
    """The fast path is taken (the fallback raises here) for what the folder holds."""
    document = {
        "apiVersion": "v1",
        "kind": "NodeConfig",
        "dnsBindAddress": "",
        "imageConfig": {"format": "openshift/origin-${component}:${version}", "latest": False},
        "masterClientConnectionOverrides": {"burst": 40, "qps": 20.0},
        "kubeletArguments": {"fail-swap-on": ["false"]},
        "preferences": {},
        "clusters": [{"name": "master-example-com:8443", "cluster": {"server": "https://m:8443"}}],
        "users": [],
        "token": None,
    }

    def refuse(*args: object, **kwargs: object) -> str:
        raise AssertionError("fell back to PyYAML")

    expected = dump_yaml(document, sort_keys=True)
    monkeypatch.setattr("nodehost.config.dump.dump_yaml", refuse)
    assert dump_block_yaml(document, sort_keys=True) == expected
    assert yaml.safe_load(expected) == document


def test_an_object_met_twice_is_left_to_pyyaml_aliases_and_all() -> None:
    shared = {"a": 1}
    document = {"x": shared, "y": shared}
    assert dump_block_yaml(document) == dump_yaml(document)
    assert "&id001" in dump_block_yaml(document)


def test_the_resolver_patterns_match_pyyaml() -> None:
    """Every pattern kept here is one PyYAML's resolver has for those first characters."""
    resolvers = yaml.resolver.Resolver.yaml_implicit_resolvers
    for starts, pattern in yamlout._RESOLVERS:
        for text in TRICKY:
            if text and text[0] in starts and pattern.fullmatch(text):
                tags = [tag for tag, regexp in resolvers.get(text[0], []) if regexp.match(text)]
                assert tags, text
