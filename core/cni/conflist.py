"""CNI network configuration files: reading, choosing, marking.

A configuration directory holds ``*.conf``/``*.json`` files (one plugin) and
``*.conflist`` files (a chain).  Runtimes use the lexicographically first file
that parses (libcni's ``ConfFiles`` + sort); :func:`first_network` does the
same.  Every network is handled here in configuration-list form: a single
plugin file becomes a list of one.

nodehost marks the files it writes with a top-level ``"nodehost"`` key (libcni
and the plugins ignore unknown top-level keys of a list), so
``nodehost network cleanup`` removes only its own files.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Mapping
from typing import Any

from nodehost.config.jsonsafe import parse_json
from nodehost.fileread import TEXT_LIMIT, read_file
from nodehost.frozen import frozen

#: File name extensions runtimes read from a CNI configuration directory.
CONFIG_EXTENSIONS = (".conf", ".conflist", ".json")

#: The top-level key that marks a configuration list nodehost wrote.
MARKER_KEY = "nodehost"


class ConflistError(ValueError):
    """A network configuration is unreadable or malformed; the message names the file."""


def network_files(conf_dir: str) -> list[str]:
    """Configuration files in ``conf_dir``, sorted as runtimes sort them ([] if none or no dir)."""
    try:
        names = sorted(os.listdir(conf_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [
        os.path.join(conf_dir, name)
        for name in names
        if name.endswith(CONFIG_EXTENSIONS)
        and not name.startswith(".")
        and os.path.isfile(os.path.join(conf_dir, name))
    ]


def as_conflist(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``data`` as a configuration list (a single-plugin config becomes a list of one).

    Raises :class:`ConflistError` unless it has a ``name``, a ``cniVersion`` and
    plugins that each have a ``type``.
    """
    if not isinstance(data, Mapping):
        raise ConflistError(f"{source}: not a JSON object")
    if "plugins" in data:
        conflist = dict(data)
    else:
        plugin = {k: v for k, v in data.items() if k not in ("name", "cniVersion")}
        conflist = {"cniVersion": data.get("cniVersion"), "name": data.get("name")}
        conflist["plugins"] = [plugin]
    for key in ("name", "cniVersion"):
        if not isinstance(conflist.get(key), str) or not conflist[key]:
            raise ConflistError(f"{source}: missing {key!r}")
    plugins = conflist["plugins"]
    if not isinstance(plugins, list) or not plugins:
        raise ConflistError(f"{source}: 'plugins' must be a non-empty list")
    for index, plugin in enumerate(plugins):
        if not isinstance(plugin, Mapping) or not isinstance(plugin.get("type"), str):
            raise ConflistError(f"{source}: plugins[{index}] has no 'type'")
    return conflist


def read_network_file(path: str) -> dict[str, Any]:
    """The configuration list in ``path`` (see :func:`as_conflist`); ``ConflistError`` if bad."""
    try:
        data = parse_json(read_file(path, TEXT_LIMIT), TEXT_LIMIT)
    except OSError as error:
        raise ConflistError(f"{path}: {error.strerror or error}") from None
    except ValueError as error:
        raise ConflistError(f"{path}: not valid JSON ({error})") from None
    return as_conflist(data, path)


def first_network(conf_dir: str) -> tuple[str, dict[str, Any]] | None:
    """The file a runtime would use and its list, or None when no file parses."""
    for path in network_files(conf_dir):
        try:
            return path, read_network_file(path)
        except ConflistError:
            continue
    return None


def plugin_types(conflist: Mapping[str, Any]) -> list[str]:
    """The ``type`` of every plugin in the list, in chain order."""
    return [str(plugin["type"]) for plugin in conflist["plugins"]]


def ipam_types(conflist: Mapping[str, Any]) -> list[str]:
    """The IPAM plugin types the chain's plugins delegate to (they are binaries too)."""
    types = []
    for plugin in conflist["plugins"]:
        ipam = plugin.get("ipam")
        if isinstance(ipam, Mapping) and isinstance(ipam.get("type"), str):
            types.append(ipam["type"])
    return types


def marked(conflist: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """A copy of ``conflist`` carrying nodehost's marker (first key after name and version)."""
    marker = {
        "managedBy": "nodehost",
        "provider": provider,
        "comment": "written by nodehost; 'nodehost network cleanup' removes it",
    }
    head = {key: conflist[key] for key in ("cniVersion", "name") if key in conflist}
    rest = {key: value for key, value in conflist.items() if key not in head and key != MARKER_KEY}
    return {**head, MARKER_KEY: marker, **rest}


def is_marked(path: str) -> bool:
    """Whether the file at ``path`` is a configuration nodehost wrote (False if unreadable)."""
    try:
        data = parse_json(read_file(path, TEXT_LIMIT), TEXT_LIMIT)
    except (OSError, ValueError):
        return False
    marker = data.get(MARKER_KEY) if isinstance(data, Mapping) else None
    return isinstance(marker, Mapping) and marker.get("managedBy") == "nodehost"


def render(conflist: Mapping[str, Any]) -> bytes:
    """The file content for ``conflist`` (indented JSON, newline-terminated)."""
    return (json.dumps(conflist, indent=2) + "\n").encode()


def conflist_file_name(provider: str) -> str:
    """nodehost's file name for a provider's list: ``10-nodehost-<provider>.conflist``."""
    return f"10-nodehost-{provider.lower().replace('/', '-')}.conflist"


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@frozen
class IpamPool:
    """One host-local range: subnet, gateway, and the addresses it hands out (``start``-``end``)."""

    subnet: IPNetwork
    gateway: IPAddress
    start: IPAddress
    end: IPAddress

    def __contains__(self, address: object) -> bool:
        """Whether host-local may hand ``address`` out (inside ``start``-``end``)."""
        if not isinstance(address, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            return False
        if address.version != self.start.version:
            return False
        return int(self.start) <= int(address) <= int(self.end)

    def describe(self) -> str:
        return f"{self.start}-{self.end} of {self.subnet}"


def ipam_pools(conflist: Mapping[str, Any]) -> list[IpamPool]:
    """Every host-local range of the chain, with host-local's defaults filled in.

    Reads both host-local forms: ``ranges`` (a list of range sets) and the
    legacy ``subnet``/``gateway``/``rangeStart``/``rangeEnd`` keys.  The
    gateway defaults to the subnet's first address, the range to the whole
    subnet but its network (and IPv4 broadcast) address.  Unparseable entries
    are skipped (host-local itself reports them).
    """
    found = []
    for plugin in conflist["plugins"]:
        ipam = plugin.get("ipam")
        if not isinstance(ipam, Mapping) or ipam.get("type") != "host-local":
            continue
        ranges = [r for rs in ipam.get("ranges") or () if isinstance(rs, list) for r in rs]
        if "subnet" in ipam:
            ranges.append(ipam)
        for entry in ranges:
            try:
                found.append(_pool(entry))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
    return found


def _pool(entry: Mapping[str, Any]) -> IpamPool:
    subnet = ipaddress.ip_network(str(entry["subnet"]), strict=False)
    last = subnet.broadcast_address - (1 if subnet.version == 4 and subnet.num_addresses > 2 else 0)
    gateway, start, end = (entry.get(key) for key in ("gateway", "rangeStart", "rangeEnd"))
    return IpamPool(
        subnet=subnet,
        gateway=ipaddress.ip_address(gateway) if gateway else subnet.network_address + 1,
        start=ipaddress.ip_address(start) if start else subnet.network_address + 1,
        end=ipaddress.ip_address(end) if end else last,
    )


def ipam_ranges(conflist: Mapping[str, Any]) -> list[tuple[IPNetwork, IPAddress]]:
    """Every host-local subnet of the chain with its gateway (see :func:`ipam_pools`)."""
    return [(pool.subnet, pool.gateway) for pool in ipam_pools(conflist)]
