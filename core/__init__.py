"""nodehost: bring up a Kubernetes node and keep it up.

The public API for plugin authors is importable from here:

* ``hookimpl`` -- the marker for hook implementations (``@nodehost.hookimpl``);
* the record types a plugin returns (:class:`ComponentRecord`,
  :class:`NetworkProviderRecord`, :class:`Problem`, :class:`Topology`);
* the component API (:mod:`nodehost.component`).

Attributes are resolved lazily so that ``import nodehost`` (and therefore
``nodehost --help``) does not pay for pluggy or anything heavier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodehost.lazy import lazy_attributes

__version__ = "0.1.0"

#: The plugin API this nodehost provides, ``(major, minor)``: the hooks, records and
#: helpers a plugin uses.  The minor number grows when something is added, the major
#: number when something a plugin may use changes or goes.  A plugin module that sets
#: ``NODEHOST_PLUGIN_API = "1.2"`` (the oldest API it works with) fails alone on a
#: nodehost whose API has another major number or a lower minor one.
PLUGIN_API = (1, 2)

#: pluggy project name and entry-point group.
PROJECT_NAME = "nodehost"

_LAZY = {
    "hookimpl": "nodehost.pluginhost.markers",
    "ComponentRecord": "nodehost.pluginhost.records",
    "NetworkProviderRecord": "nodehost.pluginhost.records",
    "Problem": "nodehost.pluginhost.records",
    "Severity": "nodehost.pluginhost.records",
    "ValidationScope": "nodehost.pluginhost.records",
    "Topology": "nodehost.pluginhost.records",
}

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.pluginhost.markers import hookimpl as hookimpl
    from nodehost.pluginhost.records import ComponentRecord as ComponentRecord
    from nodehost.pluginhost.records import NetworkProviderRecord as NetworkProviderRecord
    from nodehost.pluginhost.records import Problem as Problem
    from nodehost.pluginhost.records import Severity as Severity
    from nodehost.pluginhost.records import Topology as Topology
    from nodehost.pluginhost.records import ValidationScope as ValidationScope

__all__ = ["PLUGIN_API", "PROJECT_NAME", "__version__", *_LAZY]


__getattr__ = lazy_attributes(__name__, _LAZY)
