"""The distribution holds every package folder (setuptools' package_dir mapping hides omissions)."""

from __future__ import annotations

import configparser
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
