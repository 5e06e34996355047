"""CNI runtime mechanics: what a container runtime does with CNI, for nodehost and its providers.

nodehost acts as the CNI runtime itself (there is no ``cnitool``): it finds
plugin binaries, runs configuration lists for ADD/CHECK/DEL the way libcni
does, makes throw-away network namespaces, and cleans up after itself.

Public API (resolved lazily; ``import nodehost.cni`` costs nothing):

* describing a network -- :class:`CniNetwork`, :class:`HostLink`,
  :func:`node_network` (the configured provider's network), :func:`selects_provider`
  (whether the config runs a given provider), :data:`DEFAULT_CONF_DIR`,
  :data:`CNI_DIRS_SCHEMA` (the schema of a provider section's directory keys);
* writing one -- :func:`conflist_plan` (a provider's whole ``plan()``),
  :func:`conflist_file_name` (a provider reads its config section with
  :class:`nodehost.config.sections.SectionReader`); for a layer-2 network,
  :func:`master_network` (the master link's network that holds the pod CIDR);
* plugins -- :data:`DEFAULT_BIN_DIRS`, :func:`find_plugin`, :func:`require_plugins`;
* running chains -- :class:`RuntimeConf`, :func:`add_network`,
  :func:`check_network`, :func:`delete_network`, :class:`CniError`;
* sandboxes and checks -- :class:`Sandbox`, :func:`run_check`, :func:`clean_up`;
* configuration files -- :func:`read_network_file`, :func:`first_network`.

Modules: ``plugins`` (binary lookup), ``conflist`` (files, marker),
``invoke`` (one plugin), ``chain`` (a list), ``netns`` (namespaces),
``hostnet`` (links, addresses, sysctls), ``sandbox``, ``check``, ``network``,
``provider``, ``layer2`` (master-link checks), ``ledger`` (what nodehost created).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodehost.lazy import lazy_attributes

#: The file name of a network's ledger (:mod:`nodehost.cni.ledger`) in its component's state
#: directory; here so that a teardown can look for ledgers without loading the ledger's code.
LEDGER_NAME = "cni-ledger.json"

_LAZY = {
    "CniNetwork": "nodehost.cni.network",
    "HostLink": "nodehost.cni.network",
    "node_network": "nodehost.cni.network",
    "selects_provider": "nodehost.cni.network",
    "provider_section_problems": "nodehost.cni.network",
    "DEFAULT_CONF_DIR": "nodehost.cni.network",
    "CNI_DIRS_SCHEMA": "nodehost.cni.network",
    "conflist_plan": "nodehost.cni.provider",
    "conflist_file_name": "nodehost.cni.conflist",
    "read_network_file": "nodehost.cni.conflist",
    "first_network": "nodehost.cni.conflist",
    "DEFAULT_BIN_DIRS": "nodehost.cni.plugins",
    "find_plugin": "nodehost.cni.plugins",
    "require_plugins": "nodehost.cni.plugins",
    "RuntimeConf": "nodehost.cni.invoke",
    "CniError": "nodehost.cni.invoke",
    "add_network": "nodehost.cni.chain",
    "check_network": "nodehost.cni.chain",
    "delete_network": "nodehost.cni.chain",
    "Sandbox": "nodehost.cni.sandbox",
    "run_check": "nodehost.cni.check",
    "clean_up": "nodehost.cni.ledger",
    "master_network": "nodehost.cni.layer2",
}

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.cni.chain import add_network, check_network, delete_network
    from nodehost.cni.check import run_check
    from nodehost.cni.conflist import conflist_file_name, first_network, read_network_file
    from nodehost.cni.invoke import CniError, RuntimeConf
    from nodehost.cni.layer2 import master_network
    from nodehost.cni.ledger import clean_up
    from nodehost.cni.network import (
        CNI_DIRS_SCHEMA,
        DEFAULT_CONF_DIR,
        CniNetwork,
        HostLink,
        node_network,
        provider_section_problems,
        selects_provider,
    )
    from nodehost.cni.plugins import DEFAULT_BIN_DIRS, find_plugin, require_plugins
    from nodehost.cni.provider import conflist_plan
    from nodehost.cni.sandbox import Sandbox

__all__ = [
    "CNI_DIRS_SCHEMA",
    "DEFAULT_BIN_DIRS",
    "DEFAULT_CONF_DIR",
    "LEDGER_NAME",
    "CniError",
    "CniNetwork",
    "HostLink",
    "RuntimeConf",
    "Sandbox",
    "add_network",
    "check_network",
    "clean_up",
    "conflist_file_name",
    "conflist_plan",
    "delete_network",
    "find_plugin",
    "first_network",
    "master_network",
    "node_network",
    "provider_section_problems",
    "read_network_file",
    "require_plugins",
    "run_check",
    "selects_provider",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
