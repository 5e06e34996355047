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


@pytest.mark.parametrize(
    "layout",
    ["egg-info file", "empty METADATA", "PKG-INFO only", "egg folder"],
)
def test_a_version_in_an_unusual_layout_is_what_importlib_metadata_finds(
    layout: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layouts this reader does not read itself are left to ``importlib.metadata``."""
    head = "Metadata-Version: 2.1\nName: nodehost-layout-probe\nVersion: 3.21\n\n"
    folder = tmp_path
    if layout == "egg-info file":
        (tmp_path / "nodehost_layout_probe-3.21.egg-info").write_text(head)
    elif layout == "empty METADATA":
        info = tmp_path / "nodehost_layout_probe-3.21.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("")
        (info / "PKG-INFO").write_text(head)
    elif layout == "PKG-INFO only":
        info = tmp_path / "nodehost_layout_probe-3.21.egg-info"
        info.mkdir()
        (info / "PKG-INFO").write_text(head)
    else:
        folder = tmp_path / "nodehost_layout_probe-3.21-py3.11.egg"
        (folder / "EGG-INFO").mkdir(parents=True)
        (folder / "EGG-INFO" / "PKG-INFO").write_text(head)
    monkeypatch.syspath_prepend(str(folder))
    expected = importlib.metadata.version("nodehost-layout-probe")
    assert expected == "3.21"
    assert distribution_version("nodehost-layout-probe") == expected


def test_a_reader_that_fails_leaves_the_feature_to_dnspython(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nodehost.plugins.dns import features

    def broken(name: str) -> str:
        raise PermissionError("unreadable")

    monkeypatch.setattr(features, "distribution_version", broken)
    assert feature_available(dns._features, "idna") is None


@pytest.mark.parametrize("imported_first", ["", "importlib.metadata"])
def test_dnspython_is_given_its_answer_only_when_importlib_metadata_is_not_imported(
    imported_first: str,
) -> None:
    """With ``importlib.metadata`` imported already, nothing is to be spared: dnspython asks
    it itself, and the module is left as it is (a fresh interpreter each)."""
    import subprocess
    import sys

    script = (
        f"import sys{', ' + imported_first if imported_first else ''}\n"
        "import nodehost.plugins.dns.features\n"
        "import dns._features\n"
        "print(sorted(dns._features._cache), type(sys.modules['importlib.metadata']).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    expected = "[] module" if imported_first else "['idna'] DeferredModule"
    assert done.stdout.strip() == expected
