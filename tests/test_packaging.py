"""The distribution holds every package folder (setuptools' package_dir mapping hides omissions)."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"core": "nodehost", "plugins": "nodehost.plugins"}


def package_folders() -> dict[str, Path]:
    """Every folder with an ``__init__.py`` under core/ and plugins/, by import name."""
    found = {}
    for folder, import_name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(ROOT / folder).parts
            found[".".join((import_name, *relative))] = init.parent
    return found


def test_setup_cfg_lists_every_package() -> None:
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    listed = set(parser["options"]["packages"].split())
    assert listed == set(package_folders())


@pytest.mark.skipif(not (ROOT / "setup.cfg").exists(), reason="needs the source tree")
def test_wheel_contains_every_module(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("nodehost-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for import_name, folder in package_folders().items():
        for module in folder.glob("*.py"):
            expected = "/".join([*import_name.split("."), module.name])
            assert expected in names, f"{expected} missing from the wheel"
    assert "nodehost/py.typed" in names
    assert not any(name.startswith(("core/", "plugins/")) for name in names)


def _git_files(*folders: str) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", *folders], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip("needs a git checkout to know the tracked files")
    return [name for name in done.stdout.splitlines() if (ROOT / name).is_file()]


def _metadata() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "setup.cfg")
    return parser["metadata"]


def test_the_license_file_is_the_license_the_metadata_names() -> None:
    metadata = _metadata()
    assert metadata["license"] == "Apache-2.0"
    assert metadata["license_files"].split() == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text


def test_metadata_names_the_project_urls_and_every_supported_python() -> None:
    metadata = _metadata()
    urls = dict(line.split(" = ", 1) for line in metadata["project_urls"].strip().splitlines())
    assert {"Documentation", "Source", "Issues"} <= set(urls)
    classifiers = metadata["classifiers"].split("\n")
    minimum = metadata.parser["options"]["python_requires"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minimum}" in classifiers
    assert "Programming Language :: Python :: 3 :: Only" in classifiers


@pytest.mark.skipif(not (ROOT / "setup.cfg").exists(), reason="needs the source tree")
def test_sdist_holds_contrib_docs_and_the_whole_test_tree(tmp_path: Path) -> None:
    import tarfile

    wanted = _git_files("contrib", "tests", "docs", "LICENSE", "README.rst")
    source = tmp_path / "source"  # the tracked files alone: no egg-info from earlier builds
    for name in _git_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    script = (
        "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        cwd=source,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    archive = tmp_path / done.stdout.split()[-1]
    with tarfile.open(archive) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    missing = sorted(set(wanted) - names)
    assert not missing, missing
