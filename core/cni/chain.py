"""Running a configuration list (a chain of plugins) as libcni does.

* ADD runs the plugins in order; each gets the previous plugin's result as
  ``prevResult``; the last result is the attachment's result.
* CHECK (CNI >= 0.4.0, unless the list sets ``disableCheck``) runs them in
  order, each with the ADD result as ``prevResult``.
* DEL runs them in reverse order, each with the ADD result as ``prevResult``
  when it is known (CNI >= 0.4.0); DEL never stops at the first failure: every
  plugin gets its DEL, and the first error is raised afterwards.

Each plugin's configuration is the list entry plus the list's ``name`` and
``cniVersion``, plus ``runtimeConfig`` for the capabilities it declares and
the runtime provides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodehost.cni.invoke import DEFAULT_TIMEOUT, CniError, RuntimeConf, invoke_plugin


def plugin_config(
    conflist: Mapping[str, Any],
    plugin: Mapping[str, Any],
    runtime: RuntimeConf,
    prev_result: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What one plugin of the chain reads on stdin."""
    netconf = dict(plugin)
    netconf["name"] = conflist["name"]
    netconf["cniVersion"] = conflist["cniVersion"]
    capabilities = plugin.get("capabilities")
    if isinstance(capabilities, Mapping):
        runtime_config = {
            name: runtime.capability_args[name]
            for name, enabled in capabilities.items()
            if enabled and name in runtime.capability_args
        }
        if runtime_config:
            netconf["runtimeConfig"] = runtime_config
    if prev_result is not None:
        netconf["prevResult"] = prev_result
    return netconf


def version_at_least(conflist: Mapping[str, Any], wanted: tuple[int, int, int]) -> bool:
    """Whether the list's ``cniVersion`` is ``wanted`` or later (unparseable: False)."""
    try:
        parts = tuple(int(part) for part in str(conflist["cniVersion"]).split("."))
    except ValueError:
        return False
    return parts >= wanted


def check_supported(conflist: Mapping[str, Any]) -> bool:
    """Whether CHECK applies: CNI 0.4.0 or later and no ``disableCheck``."""
    return version_at_least(conflist, (0, 4, 0)) and not conflist.get("disableCheck", False)


def add_network(
    conflist: Mapping[str, Any],
    runtime: RuntimeConf,
    bin_dirs: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any]:
    """ADD: the chain's result; raises :class:`CniError` from the first plugin that fails."""
    result: dict[str, Any] | None = None
    for plugin in conflist["plugins"]:
        netconf = plugin_config(conflist, plugin, runtime, result)
        result = invoke_plugin(netconf, "ADD", runtime, bin_dirs, timeout=timeout) or result
    if result is None:
        raise CniError(plugin_type(conflist, -1), "ADD", None, "the chain returned no result")
    return result


def check_network(
    conflist: Mapping[str, Any],
    runtime: RuntimeConf,
    bin_dirs: Sequence[str],
    result: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """CHECK every plugin against the ADD ``result``; :class:`CniError` from the first failure."""
    for plugin in conflist["plugins"]:
        netconf = plugin_config(conflist, plugin, runtime, result)
        invoke_plugin(netconf, "CHECK", runtime, bin_dirs, timeout=timeout)


def delete_network(
    conflist: Mapping[str, Any],
    runtime: RuntimeConf,
    bin_dirs: Sequence[str],
    result: Mapping[str, Any] | None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """DEL every plugin, last first; raises the first :class:`CniError` after all ran."""
    prev = result if version_at_least(conflist, (0, 4, 0)) else None
    first_error: CniError | None = None
    for plugin in reversed(conflist["plugins"]):
        netconf = plugin_config(conflist, plugin, runtime, prev)
        try:
            invoke_plugin(netconf, "DEL", runtime, bin_dirs, timeout=timeout)
        except CniError as error:
            first_error = first_error or error
    if first_error is not None:
        raise first_error


def plugin_type(conflist: Mapping[str, Any], index: int) -> str:
    return str(conflist["plugins"][index].get("type", "?"))
