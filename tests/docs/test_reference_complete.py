"""Every command, flag, hook, record field and config key has its entry in the built docs.

The reference pages are generated from the code; these tests fail when a
generator leaves something out or a page stops including it.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys

import click
import pytest
from docsbuild import DOCS, BuiltDocs


def command_paths() -> list[tuple[str, click.Command]]:
    """Every ``nodehost`` command and subcommand, by its sphinx-click program name."""
    from nodehost.cli import cli

    found: list[tuple[str, click.Command]] = []
    pending: list[tuple[str, click.Command]] = [("nodehost", cli)]
    while pending:
        prefix, command = pending.pop()
        found.append((prefix, command))
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                child = command.get_command(context, name)
                assert child is not None
                if not child.hidden:
                    pending.append((f"{prefix}-{name}", child))
    return found


def visible_flags(command: click.Command) -> list[str]:
    """The flags ``--help`` shows, but ``--help`` itself (sphinx-click leaves it out)."""
    context = click.Context(command)
    help_option = command.get_help_option(context)
    return [
        flag
        for param in command.get_params(context)
        if isinstance(param, click.Option) and not param.hidden and param is not help_option
        for flag in param.opts + param.secondary_opts
    ]


def test_every_command_has_a_section(built_docs: BuiltDocs) -> None:
    page = built_docs.page_text("reference/cli")
    missing = [name for name, _ in command_paths() if f'id="{name}"' not in page]
    assert not missing, f"commands without a section in reference/cli: {missing}"


def test_every_flag_of_every_command_has_an_entry(built_docs: BuiltDocs) -> None:
    documented = built_docs.names("std:cmdoption")
    missing = [
        f"{program} {flag}"
        for program, command in command_paths()
        for flag in visible_flags(command)
        if f"{program}.{flag}" not in documented
    ]
    assert not missing, f"flags without an entry: {missing}"


def test_start_shows_the_options_plugins_declare(built_docs: BuiltDocs) -> None:
    """``start``'s flags include the built-in plugins' (``--dns-records-file`` style)."""
    from nodehost.cli.start import start

    documented = built_docs.names("std:cmdoption")
    flags = visible_flags(start)
    declared = {"--local-cluster", "--bootstrap-config-name", "--bootstrap-timeout"}
    assert declared <= set(flags)
    assert all(f"nodehost-start.{flag}" in documented for flag in flags)


def hookspec_modules() -> list[str]:
    """The core's hookspecs and every built-in plugin's own (``nodehost.plugins.X.hookspecs``)."""
    import nodehost.plugins

    found = ["nodehost.hookspecs"]
    for package in pkgutil.iter_modules(nodehost.plugins.__path__, "nodehost.plugins."):
        if package.ispkg and importlib.util.find_spec(f"{package.name}.hookspecs"):
            found.append(f"{package.name}.hookspecs")
    return found


HOOKSPEC_MODULES = hookspec_modules()


@pytest.mark.parametrize("module_name", HOOKSPEC_MODULES)
def test_every_hook_has_an_entry(built_docs: BuiltDocs, module_name: str) -> None:
    module = importlib.import_module(module_name)
    hooks = [
        name
        for name, value in inspect.getmembers(module, inspect.isfunction)
        if name.startswith("nodehost_") and value.__module__ == module_name
    ]
    assert hooks
    documented = built_docs.names("py:function")
    missing = [name for name in hooks if f"{module_name}.{name}" not in documented]
    assert not missing, f"hooks without an entry: {missing}"


def record_classes() -> list[str]:
    """Every dataclass a plugin returns or reads: the records of ``nodehost.pluginhost.records``
    and of the plugins' hookspecs modules, and the contexts hooks and plans are given."""
    found = ["nodehost.component.PlanContext", "nodehost.check.CheckContext"]
    for module_name in ["nodehost.pluginhost.records", *HOOKSPEC_MODULES[1:]]:
        module = importlib.import_module(module_name)
        found += [
            f"{module_name}.{name}"
            for name, value in inspect.getmembers(module, dataclasses.is_dataclass)
            if value.__module__ == module_name and inspect.isclass(value)
        ]
    return found


RECORDS = record_classes()


@pytest.mark.parametrize("record", RECORDS)
def test_every_record_field_has_an_entry(built_docs: BuiltDocs, record: str) -> None:
    module_name, _, class_name = record.rpartition(".")
    cls = getattr(importlib.import_module(module_name), class_name)
    documented = built_docs.names("py:attribute")
    missing = [f.name for f in dataclasses.fields(cls) if f"{record}.{f.name}" not in documented]
    assert not missing, f"{record} fields without an entry: {missing}"


def test_every_nodeconfig_key_has_an_entry(built_docs: BuiltDocs) -> None:
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from nodehost_docs import builtin_schema, schema_keys
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    keys = [path for path, _ in schema_keys(builtin_schema())]
    assert {"nodeName", "servingInfo.certFile", "dnsServerConfig"} <= set(keys)
    documented = built_docs.names("std:confval")
    missing = [key for key in keys if key not in documented]
    assert not missing, f"NodeConfig keys without an entry: {missing}"


def test_config_types_name_each_choice_once(built_docs: BuiltDocs) -> None:
    """``array of string or null or null`` hid which ``null`` is the array's own:
    an item type of several choices is bracketed, so no choice repeats."""
    text = re.sub(r"<[^>]+>", "", built_docs.page_text("reference/config"))
    page = " ".join(html.unescape(text).split())
    assert "array of (string or null) or null" in page
    repeated = sorted(set(re.findall(r"\b(\w+) or \1\b", page)))
    assert not repeated, f"types that repeat a choice: {repeated}"


def test_every_key_without_effect_is_listed(built_docs: BuiltDocs) -> None:
    from nodehost.config.noeffect import NO_EFFECT

    page = " ".join(html.unescape(built_docs.page_text("reference/noeffect")).split())
    missing = [key for key, why in NO_EFFECT.items() if key not in page or why not in page]
    assert not missing, f"keys without effect missing from reference/noeffect: {missing}"
    assert page.count("Origin's NodeConfig carries settings") == 1, "the intro is repeated"
    assert "{'allowDisabledDocker'" not in page, "the raw NO_EFFECT mapping is printed"


def test_every_exit_code_is_listed(built_docs: BuiltDocs) -> None:
    from nodehost.errors import EXIT_CODES

    page = built_docs.page_text("reference/exitcodes")
    missing = [code for code in EXIT_CODES if f'<span class="pre">{code}</span>' not in page]
    assert not missing, f"exit codes missing from reference/exitcodes: {missing}"


def test_every_fixture_of_the_pytest_plugin_has_an_entry(built_docs: BuiltDocs) -> None:
    import ast

    import nodehost.testing.pytest_plugin as plugin

    tree = ast.parse(inspect.getsource(plugin))
    fixtures = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("fixture" in ast.unparse(decorator) for decorator in node.decorator_list)
    ]
    assert "node_folder" in fixtures
    documented = built_docs.names("py:function")
    missing = [name for name in fixtures if f"{plugin.__name__}.{name}" not in documented]
    assert not missing, f"fixtures without an entry: {missing}"
