"""dnspython's import-time feature check, answered from the distributions' files."""

from __future__ import annotations

import importlib.metadata

import dns._features
import pytest

from nodehost.pluginhost.entrypoints import distribution_version
from nodehost.plugins.dns.features import feature_available


@pytest.mark.parametrize("feature", sorted(dns._features._requirements))
def test_every_feature_gets_the_answer_dnspython_gets_from_importlib_metadata(
    feature: str,
) -> None:
    requirements = dns._features._requirements[feature]
    expected = all(dns._features._version_check(requirement) for requirement in requirements)
    assert feature_available(dns._features, feature) is expected


def test_an_unknown_feature_or_table_is_left_to_dnspython() -> None:
    assert feature_available(dns._features, "no-such-feature") is None

    class Unknown:
        pass

    assert feature_available(Unknown, "idna") is None  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["dnspython", "idna", "PyYAML", "pyyaml", "h2", "click"])
def test_a_distribution_version_is_what_importlib_metadata_finds(name: str) -> None:
    assert distribution_version(name) == importlib.metadata.version(name)


def test_a_missing_distribution_has_no_version() -> None:
    assert distribution_version("nodehost-test-not-installed") is None
