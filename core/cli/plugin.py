"""``nodehost plugin new NAME``: a plugin package whose tests pass, to start from.

It writes ``nodehost-NAME/`` (or ``--directory``): ``pyproject.toml``,
``setup.cfg`` with the ``nodehost`` entry point, ``nodehost_NAME/__init__.py``
(one component with its own config section, validated and planned from one
reading of it) and ``tests/test_NAME.py`` using nodehost's pytest fixtures --
the package docs/plugins/writing.rst builds by hand.  The folder
appears whole or not at all (written beside the target, then renamed); an
existing folder is never written into.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from nodehost.errors import UsageError

PYPROJECT = """\
[build-system]
requires = ["setuptools>=64", "wheel"]
build-backend = "setuptools.build_meta"
"""

SETUP_CFG = """\
[metadata]
name = nodehost-{name}
version = 0.1.0
description = A nodehost plugin: the {name} component

[options]
python_requires = >=3.11
packages = {package}
install_requires =
    nodehost>={nodehost_version}

[options.entry_points]
nodehost =
    {name} = {package}
"""

MODULE = '''\
"""The {name} component: serves a folder over HTTP on loopback while the node runs.

Configured in the ``{section}`` section of node-config.yaml::

    {section}:
      port: 8099
"""

from __future__ import annotations

from typing import Any

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, HttpProbe, PlanContext, ProcessSpec
from nodehost.config.sections import SectionReader, section_schema

#: The oldest nodehost plugin API this plugin works with (``nodehost.PLUGIN_API``).
NODEHOST_PLUGIN_API = "{api}"

SECTION = "{section}"
DEFAULT_PORT = 8099
SCHEMA = section_schema(
    "The {name} component.",
    {{"port": {{"type": "integer", "default": DEFAULT_PORT, "description": "Port to serve on."}}}},
)


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="{name}",
            summary="Serves a folder over HTTP on loopback.",
            component={cls}(),
            default=False,
            validation_scope=ValidationScope.NETWORK,
            config_sections=(SECTION,),
            config_schema={{SECTION: SCHEMA}},
        )
    ]


@hookimpl
def nodehost_validate_config(config: Any, selected: frozenset[str]) -> list[Problem]:
    return read(config)[1] if "{name}" in selected else []


def read(config: Any) -> tuple[int, list[Problem]]:
    """The section's port and the problems found reading it."""
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    port = reader.integer("port", DEFAULT_PORT, minimum=1, maximum=65535)
    reader.unknown_keys()
    return port, reader.problems


class {cls}:
    """Runs ``python3 -m http.server`` on 127.0.0.1; ready when it answers."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        port, _ = read(context.config)
        argv = ("python3", "-m", "http.server", "--bind", "127.0.0.1", str(port))
        return ComponentPlan(
            run=ProcessSpec(argv=argv, readiness=HttpProbe(url=f"http://127.0.0.1:{{port}}/"))
        )
'''

TESTS = '''\
"""The {name} component, run by a real nodehost (fixtures of nodehost's pytest plugin)."""


def test_{package_name}_runs_and_stops(node_folder, node_run, free_port):
    config = node_folder.update({{"{section}": {{"port": free_port()}}}})
    run = node_run(config, components="{name}").ready()
    assert run.component("{name}")["ready"] is True
    assert run.stop() == 0


def test_a_bad_port_is_reported(node_folder, nodehost_cli):
    node_folder.update({{"{section}": {{"port": 0}}}})
    result = nodehost_cli(
        "config", "validate", str(node_folder.config_path), "--components={name}"
    )
    assert result.code == 255
    assert "  {section}.port: Invalid value: 0: must be between 1 and 65535" in result.err


def test_the_plugin_is_listed(nodehost_cli):
    result = nodehost_cli("plugins")
    assert result.code == 0
    assert "nodehost-{name}" in result.out
'''


def package_files(name: str) -> dict[str, str]:
    """Relative path -> text of every file of plugin ``name`` (a valid component name)."""
    from nodehost import PLUGIN_API, __version__

    package = "nodehost_" + name.replace("-", "_")
    words = name.split("-")
    values = {
        "name": name,
        "package": package,
        "package_name": name.replace("-", "_"),
        "section": words[0] + "".join(word.capitalize() for word in words[1:]),
        "cls": "".join(word.capitalize() for word in words),
        "api": f"{PLUGIN_API[0]}.{PLUGIN_API[1]}",
        "nodehost_version": ".".join(__version__.split(".")[:2]),
    }
    return {
        "pyproject.toml": PYPROJECT,
        "setup.cfg": SETUP_CFG.format(**values),
        f"{package}/__init__.py": MODULE.format(**values),
        f"tests/test_{values['package_name']}.py": TESTS.format(**values),
    }


def write_package(target: Path, files: dict[str, str]) -> None:
    """Write ``files`` into a new folder ``target``, which appears whole or not at all.

    Raises :class:`FileExistsError` when ``target`` exists (nothing is written).
    """
    if target.exists() or target.is_symlink():
        raise FileExistsError(target)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for relative, text in files.items():
            path = staging / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        staging.chmod(0o755)
        os.rename(staging, target)  # fails if target appeared meanwhile (non-empty)
    except BaseException:
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
        raise


@click.group("plugin", short_help="Start a new plugin package.")
def plugin() -> None:
    """Tools for plugin authors."""


@plugin.command("new", short_help="Write a plugin package whose tests pass.")
@click.argument("name")
@click.option(
    "--directory",
    metavar="DIR",
    help="Folder to create  [default: ./nodehost-NAME]; it must not exist.",
)
def new(name: str, directory: str | None) -> None:
    """Write a plugin package for component NAME (lower-case letters, digits, '-')."""
    from nodehost.pluginhost.records import check_name

    try:
        check_name("component", name)
    except ValueError as error:
        raise UsageError(str(error), "NAME") from None
    target = Path(directory or f"nodehost-{name}").absolute()
    if not target.parent.is_dir():
        raise UsageError(f"{target.parent} is not a folder", "--directory")
    try:
        write_package(target, package_files(name))
    except FileExistsError:
        raise UsageError(f"{target} exists; nothing was written", "--directory") from None
    click.echo(f"Wrote {target}: install it beside nodehost and run its tests:")
    click.echo(f"    pip install -e {target} && pytest {target / 'tests'}")
