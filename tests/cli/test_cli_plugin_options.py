"""Plugins declare their own ``start`` options (``nodehost_options``); a bad one fails alone.

Through the real CLI with throw-away distributions: the option is in ``--help``
under the plugin's name, parsed with its type, given by flag or ``NODEHOST_*``
variable, and its value reaches the plugin's component plan.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
import pytest

from nodehost.options import HOST_OPTION_WORDS
from nodehost.pluginhost.manager import (
    ENV_DISABLE,
    ENV_NO_PLUGINS,
    ENV_STRICT,
)
from nodehost.testing.distributions import throwaway_distribution

WIDGET = """
from nodehost import ComponentRecord, OptionRecord, hookimpl
from nodehost.component import ComponentPlan

class Widget:
    def plan(self, context):
        size = context.options.plugin_values["widget_size"]
        return ComponentPlan(notes=(f"widget size {size}",))

@hookimpl
def nodehost_options():
    return [OptionRecord("--widget-size", "How big the widget is.", type=int, default=3)]

@hookimpl
def nodehost_components():
    return [ComponentRecord("widget", "a widget", Widget())]
"""

CLASHING = """
from nodehost import OptionRecord, hookimpl

@hookimpl
def nodehost_options():
    return [OptionRecord("--state-dir", "Mine now.")]
"""


@pytest.fixture
def widget_env(tmp_path: Path) -> dict[str, str]:
    dists = throwaway_distribution(tmp_path / "dists", "widgetplugin", WIDGET)
    return {**os.environ, "PYTHONPATH": str(dists)}


def dry_run(nodehost_exe: Any, node_dir: Path, env: dict[str, str], *extra: str) -> Any:
    config = str(node_dir / "node-config.yaml")
    args = ["start", f"--config={config}", "--components=widget", "--dry-run", *extra]
    return nodehost_exe(*args, env=env)


def test_a_plugins_option_is_in_start_help_under_its_name(
    nodehost_exe: Any, widget_env: dict[str, str]
) -> None:
    result = nodehost_exe("start", "--help", env=widget_env)
    assert result.code == 0, result.err
    section = result.out.split("Options of plugin widgetplugin:", 1)[1]
    assert "--widget-size INTEGER" in section
    assert "NODEHOST_WIDGET_SIZE" in section
    assert "--widget-size" not in result.out.split("Options of plugin", 1)[0]
    for command in ("check", "install"):  # they take start's options, the plugins' too
        shown = nodehost_exe(command, "--help", env=widget_env).out
        assert "--widget-size" in shown.split("Options of plugin widgetplugin:", 1)[1]


def test_a_plugins_option_value_reaches_its_plan(
    nodehost_exe: Any, node_dir: Path, widget_env: dict[str, str]
) -> None:
    assert "widget size 3" in dry_run(nodehost_exe, node_dir, widget_env).out
    assert "widget size 7" in dry_run(nodehost_exe, node_dir, widget_env, "--widget-size=7").out
    from_variable = dry_run(nodehost_exe, node_dir, {**widget_env, "NODEHOST_WIDGET_SIZE": "9"})
    assert "widget size 9" in from_variable.out, from_variable.err


def test_a_plugins_option_is_parsed_with_its_type(
    nodehost_exe: Any, node_dir: Path, widget_env: dict[str, str]
) -> None:
    result = dry_run(nodehost_exe, node_dir, widget_env, "--widget-size=big")
    assert result.code == 2
    assert "--widget-size" in result.err and "'big' is not a valid integer" in result.err


def test_a_disabled_plugin_has_no_options(
    nodehost_exe: Any, node_dir: Path, widget_env: dict[str, str]
) -> None:
    result = dry_run(
        nodehost_exe, node_dir, widget_env, "--disable-plugin=widgetplugin", "--widget-size=7"
    )
    assert result.code == 2
    assert "No such option '--widget-size'" in result.err


def test_an_option_clashing_with_nodehosts_fails_its_plugin_alone(
    nodehost_exe: Any, node_dir: Path, tmp_path: Path
) -> None:
    dists = throwaway_distribution(tmp_path / "dists", "clashplugin", CLASHING)
    env = {**os.environ, "PYTHONPATH": str(dists)}
    config = str(node_dir / "node-config.yaml")
    args = ["start", f"--config={config}", "--components=kubelet", "--standins=missing"]
    dry_run = nodehost_exe(*args, "--dry-run", env=env)
    assert dry_run.code == 0, dry_run.err
    assert dry_run.err.count('"entry_point": "clashplugin"') == 1  # reported once, not per load
    strict = nodehost_exe(*args, "--dry-run", "--strict-plugins", env=env)
    assert strict.code == 1 and "clashplugin" in strict.err
    listing = nodehost_exe("plugins", "--json", env=env)
    (info,) = [info for info in json.loads(listing.out) if info["name"] == "clashplugin"]
    assert (info["status"], info["hook"]) == ("failed", "nodehost_options")
    assert info["error"] == "start option '--state-dir' is already taken by nodehost"


def test_nodehosts_own_words_are_claimed_only_where_a_plugins_option_claims_them_too() -> None:
    """A word claimed once clashes with nothing: the clash check makes no claim for the
    host's words no plugin option names (about 120 records a command otherwise)."""
    from nodehost import OptionRecord
    from nodehost.pluginhost.clashes import option_claims
    from nodehost.pluginhost.manager import Provided

    declared = [
        Provided(OptionRecord("--state-dir", "Mine now."), "clashplugin"),
        Provided(OptionRecord("--widget-size", "How big.", type=int), "widgetplugin"),
    ]
    claims = list(option_claims(declared, HOST_OPTION_WORDS))
    plugins = {claim.word for claim in claims if claim.item is not None}
    host = [claim.word for claim in claims if claim.item is None]
    assert host == sorted(plugins & HOST_OPTION_WORDS)
    assert "--state-dir" in host and "--widget-size" not in host
    assert [claim.word for claim in claims][len(host) :] == [
        "--state-dir", "state_dir", "NODEHOST_STATE_DIR",
        "--widget-size", "widget_size", "NODEHOST_WIDGET_SIZE",
    ]  # fmt: skip


def test_host_option_words_are_the_commands_own() -> None:
    """:data:`HOST_OPTION_WORDS` (read without click) lists every flag, value name and
    variable of ``start``, ``check`` and ``install``'s own options."""
    from nodehost.cli.check import check
    from nodehost.cli.install import install
    from nodehost.cli.start import environment_variable, start

    words = {ENV_DISABLE, ENV_NO_PLUGINS, ENV_STRICT}
    for command in (start, check, install):
        for param in command.host_params:
            if isinstance(param, click.Option):
                words.update(opt for opt in param.opts if opt.startswith("--"))
                words.add(param.name or "")
                if isinstance(param.envvar, str):
                    words.add(param.envvar)
                elif param.allow_from_autoenv:
                    words.add(environment_variable(param))
    assert words == HOST_OPTION_WORDS


def test_install_writes_a_plugins_option_given_to_it(
    nodehost_exe: Any, widget_env: dict[str, str]
) -> None:
    result = nodehost_exe("install", "--dry-run", "--widget-size=5", env=widget_env)
    assert result.code == 0, result.err
    assert 'NODEHOST_WIDGET_SIZE="5"' in result.out


def test_a_bad_bootstrap_wait_is_a_usage_error_naming_it(nodehost_exe: Any, node_dir: Path) -> None:
    config = str(node_dir / "node-config.yaml")
    args = ["start", f"--config={config}", "--components=kubelet", "--dry-run"]
    result = nodehost_exe(*args, "--bootstrap-timeout=soon")
    assert result.code == 2
    assert result.err.startswith("error: invalid value for --bootstrap-timeout: ")
    assert "--serving-cert-wait" in nodehost_exe(*args, "--serving-cert-wait=-1s").err
